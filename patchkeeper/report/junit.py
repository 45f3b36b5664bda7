"""`check` results as JUnit XML, which CI systems show as test results: one suite per ref,
one test case per patch; a patch that would not apply (or could not be judged) is a failure,
one that needs nothing (not-applicable, upstream-has-it) is skipped with the reason.

The document is valid against the Jenkins JUnit schema (xunit plugin's junit-10.xsd): every
suite carries `tests`, `failures`, `errors`, `skipped` and `time`, every case `time`. The
patches of a ref are judged together (one `git apply` stream), so a case's `time` is an equal
share of its ref's; they add up to the suite's. A failure's `type` is the outcome (`undecided`
for a patch that could not be judged) and its `message` the reason alone, so a reporter that
shows "type: message" says each once.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.engine.checking import RefReport
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.report.check_table import per_results
from patchkeeper.report.render import patch_lines

_SKIPPED = (oc.NOT_APPLICABLE, oc.UPSTREAM_HAS_IT)


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def _failed(result: PatchResult) -> bool:
    return result.outcome in oc.FAILED or result.needs_a_person


def _kind(result: PatchResult) -> str:
    """The outcome as a failure's `type`: an undecided not-applicable is `undecided`."""
    return "undecided" if result.undecided else result.outcome


@dataclass(frozen=True)
class _Cases:
    """A results list as test cases: each result with its text, and how many failed and
    were skipped; made once for the refs that share the list (checking.py)."""

    said: list[tuple[PatchResult, str]]
    failures: int
    skipped: int


def _cases(results: list[PatchResult]) -> _Cases:
    said = [(r, "\n".join(patch_lines(r, indent="", colour=False))) for r in results]
    failures = sum(1 for r in results if _failed(r))
    skipped = sum(1 for r in results if r.outcome in _SKIPPED and not _failed(r))
    return _Cases(said, failures, skipped)


def _case(
    suite: ET.Element, report: RefReport, result: PatchResult, text: str, seconds: float
) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        name=result.name,
        classname=f"patchkeeper.check.{report.ref}",
        time=_seconds(seconds),
    )
    if _failed(result):
        message = result.detail or _kind(result)
        failure = ET.SubElement(case, "failure", message=message, type=_kind(result))
        failure.text = text
    elif result.outcome in _SKIPPED:
        ET.SubElement(case, "skipped", message=result.detail or result.outcome)
    else:
        ET.SubElement(case, "system-out").text = text


def junit_xml(reports: list[RefReport]) -> bytes:
    """The whole JUnit XML document."""
    suites = ET.Element("testsuites", name="patchkeeper check")
    totals = {"tests": 0, "failures": 0}
    for report, cases in zip(reports, per_results(reports, _cases), strict=True):
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"{report.ref} ({report.version})",
            tests=str(len(report.results)),
            failures=str(cases.failures),
            errors="0",
            skipped=str(cases.skipped),
            time=_seconds(report.seconds),
        )
        share = report.seconds / len(report.results) if report.results else 0.0
        for result, text in cases.said:
            _case(suite, report, result, text, share)
        totals["tests"] += len(report.results)
        totals["failures"] += cases.failures
    suites.set("tests", str(totals["tests"]))
    suites.set("failures", str(totals["failures"]))
    suites.set("errors", "0")
    suites.set("time", _seconds(sum(r.seconds for r in reports)))
    ET.indent(suites)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(reports: list[RefReport], path: Path) -> None:
    """The document to PATH; `-` is stdout."""
    if str(path) == "-":
        sys.stdout.buffer.write(junit_xml(reports))
        sys.stdout.flush()
    else:
        path.write_bytes(junit_xml(reports))
