"""`check` results as JUnit XML, which CI systems show as test results: one suite per ref,
one test case per patch; a patch that would not apply is a failure, one that needs nothing
(not-applicable, upstream-has-it) is skipped with the reason."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from patchkeeper import outcomes as oc
from patchkeeper.checking import RefReport
from patchkeeper.outcomes import PatchResult
from patchkeeper.report import patch_lines


def _case(suite: ET.Element, report: RefReport, result: PatchResult) -> None:
    case = ET.SubElement(
        suite, "testcase", name=result.name, classname=f"patchkeeper.check.{report.ref}"
    )
    message = f"{result.outcome}: {result.detail}" if result.detail else result.outcome
    text = "\n".join(patch_lines(result, indent="", colour=False))
    if result.outcome in oc.FAILED or result.needs_a_person:
        failure = ET.SubElement(case, "failure", message=message, type=result.outcome)
        failure.text = text
    elif result.outcome in (oc.NOT_APPLICABLE, oc.UPSTREAM_HAS_IT):
        ET.SubElement(case, "skipped", message=message)
    else:
        ET.SubElement(case, "system-out").text = text


def junit_xml(reports: list[RefReport]) -> bytes:
    """The whole JUnit XML document."""
    suites = ET.Element("testsuites", name="patchkeeper check")
    for report in reports:
        failed = [r for r in report.results if r.outcome in oc.FAILED or r.needs_a_person]
        skipped = [
            r
            for r in report.results
            if r.outcome in (oc.NOT_APPLICABLE, oc.UPSTREAM_HAS_IT) and not r.needs_a_person
        ]
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"{report.ref} ({report.version})",
            tests=str(len(report.results)),
            failures=str(len(failed)),
            skipped=str(len(skipped)),
        )
        for result in report.results:
            _case(suite, report, result)
    ET.indent(suites)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(reports: list[RefReport], path: Path) -> None:
    path.write_bytes(junit_xml(reports))
