"""Smoke checks: run a patch set's behavioural checks against the install, parse their verdicts.

A check is a Python script in the patch set's `smoke/` folder (`smoke/NAME.py`) that prints one
JSON verdict. The modules, from the bottom up:
- `interpreter`: which Python runs the checks (only the install's own can make a pass count);
- `results`: the verdicts (`pass`, `fail`, `error`) and the step, check and set results;
- `parse`: what a check printed, read into its result (anything doubtful is `error`);
- `scratch`: each running check's HOME and TMPDIR, and clearing those of killed runs;
- `one_check`: one check run in its own process group with a clean environment;
- `catalog`: where the checks are and which ones `--check` and the headers ask for;
- `suite`: a list of checks run in order under the install's interpreter;
- `for_patches`: the checks a run's patch results call for (what `update` and `apply` run).
"""
