"""Which loaded modules a forked child looks at for the user's (pipeline/target/code.py's
`modules_not_from_the_zygote`): those the zygote did not hold when it forked, found by walking
back from the end of sys.modules to the zygote's last module.

A real zygote and a real fork: a fresh Python process loads torch and the pipeline, remembers its
modules as the worker's zygote does (warmup.ready_to_fork), forks, and the child imports."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# Runs in a fresh process; prints, as JSON, what the forked child's scan found after each step.
_ZYGOTE_AND_CHILD = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    from onnxlens.exporter.pipeline.target import code
    import colorsys  # a stdlib module the zygote holds

    assert code.modules_not_from_the_zygote(), "no zygote yet: every module is looked at"
    code.remember_zygote_modules()
    read, write = os.pipe()
    if os.fork() == 0:
        def names():
            return [name for name, _ in code.modules_not_from_the_zygote()]
        seen = {"after the fork": names()}
        import user_model  # the job's import (a file in argv[1])
        seen["after an import"] = names()
        seen["walked"] = [name for name, _ in code._loaded_after_the_zygote()]
        del sys.modules["colorsys"]
        import colorsys  # a zygote module imported anew: another object, at the end
        seen["after a fresh import of a zygote module"] = names()
        os.write(write, json.dumps(seen).encode())
        os._exit(0)
    os.close(write)
    print(os.read(read, 1 << 20).decode())
""")


def test_a_forked_child_sees_only_the_modules_loaded_after_the_fork(tmp_path):
    (tmp_path / "user_model.py").write_text("import wave  # a stdlib module the zygote does not hold\n")
    run = subprocess.run([sys.executable, "-c", _ZYGOTE_AND_CHILD, str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.strip().splitlines()[-1])

    assert seen["after the fork"] == []
    # What the import loaded, in the order it was loaded (wave imports its own helpers first).
    assert seen["after an import"][-1] == "user_model"
    assert "wave" in seen["after an import"]
    assert "colorsys" not in seen["after an import"]
    # The walk back from the end stopped at the zygote's last module: it visited nothing else.
    assert seen["walked"] == seen["after an import"]
    assert seen["after a fresh import of a zygote module"] == seen["after an import"] + ["colorsys"]
