"""User code that hangs, crashes, exits, eats memory or floods stdout: each becomes a finding on
the user's line, and the worker carries on. Real children, real signals, real torch."""

from __future__ import annotations

import pytest

from onnxlens.server.service.events import OutputEvent
from tests.support.workspace import line_of
from tests.worker.worker_helpers import MLP_SOURCE, spec_for, worker_children, write_model

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]  # the export worker as processes


async def _next_job_is_fine(service, tmp_path):
    write_model(tmp_path, "fine.py", MLP_SOURCE)
    result = await service.export(spec_for(tmp_path, "fine.py"))
    assert result.status == "ok", result.findings


async def test_an_infinite_loop_is_a_timeout_on_the_loop_line(service, tmp_path):
    path = write_model(tmp_path, "spin.py", '''
        import torch


        def spin():
            while True: pass  # the loop


        class Model(torch.nn.Module):
            def forward(self, x):
                spin()  # the call
                return x + 1


        def inputs():
            return (torch.randn(2),)
    ''')

    result = await service.export(spec_for(tmp_path, "spin.py", timeout=5))

    [finding] = result.findings
    assert finding.code == "timeout"
    assert "5 s" in finding.message
    assert finding.location.file == str(path)
    assert finding.location.line == line_of(path, "the loop")
    assert [r.line for r in finding.related][:1] == [line_of(path, "the call")]
    assert result.closure == [str(path)]  # known though the child never sent a result
    assert worker_children(service) == []
    await _next_job_is_fine(service, tmp_path)


async def test_a_segfault_is_a_crash_on_its_line(service, tmp_path):
    path = write_model(tmp_path, "segv.py", '''
        import ctypes

        import torch


        class Model(torch.nn.Module):
            def forward(self, x):
                return x + 1


        def inputs():
            ctypes.string_at(0)  # boom
            return (torch.randn(2),)
    ''')

    result = await service.export(spec_for(tmp_path, "segv.py"))

    [finding] = result.findings
    assert finding.code == "crash"
    assert "SIGSEGV" in finding.message
    assert (finding.location.file, finding.location.line) == (str(path), line_of(path, "boom"))
    await _next_job_is_fine(service, tmp_path)


@pytest.mark.parametrize("call, expected", [("os._exit(3)", "status 3"), ("sys.exit()", "sys.exit")])
async def test_user_code_exiting_is_a_crash_on_its_line(service, tmp_path, call, expected):
    path = write_model(tmp_path, "quits.py", f'''
        import os
        import sys

        import torch


        def build():
            {call}  # exits


        def inputs():
            return (torch.randn(2),)
    ''')

    result = await service.export(spec_for(tmp_path, "quits.py", model="build"))

    [finding] = result.findings
    assert finding.code == "crash"
    assert expected in finding.message
    assert (finding.location.file, finding.location.line) == (str(path), line_of(path, "# exits"))
    await _next_job_is_fine(service, tmp_path)


async def test_a_memory_blow_up_under_the_cap_is_out_of_memory(service, tmp_path):
    # 12.8 GB of zero pages: only address space unless touched, so the test is harmless even
    # if the cap did not work (it then fails on the assertions instead).
    path = write_model(tmp_path, "hog.py", '''
        import torch

        hog = [bytearray(64 * 2**20) for _ in range(200)]  # allocates


        class Model(torch.nn.Module):
            def forward(self, x):
                return x + 1


        def inputs():
            return (torch.randn(2),)
    ''')

    result = await service.export(spec_for(tmp_path, "hog.py", memory_limit_mb=256))

    [finding] = result.findings
    assert finding.code == "crash"
    assert "out of memory" in finding.message
    assert "256 MB" in finding.message
    assert finding.location.line == line_of(path, "# allocates")
    await _next_job_is_fine(service, tmp_path)


async def test_megabytes_of_prints_do_not_block_and_are_capped(service, tmp_path):
    write_model(tmp_path, "chatty.py", '''
        import sys

        import torch

        for _ in range(4000):
            print("x" * 1000)  # 4 MB to stdout at import
        sys.stderr.write("e" * 2_000_000)


        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(4, 4)

            def forward(self, x):
                print("forward", "y" * 100_000)
                return self.linear(x)


        def inputs():
            return (torch.randn(2, 4),)
    ''')
    events = []

    result = await service.export(spec_for(tmp_path, "chatty.py", timeout=60), events.append)

    assert result.status == "ok", result.findings
    logged = "".join(e.text for e in events if isinstance(e, OutputEvent))
    assert logged.startswith("x" * 1000)
    assert "not shown" in logged
    assert len(logged) < 70 * 1024


async def test_multithreaded_compute_at_import_does_not_hang(service, tmp_path):
    write_model(tmp_path, "threads.py", '''
        import torch

        torch.set_num_threads(2)
        a = torch.randn(1500, 1500)
        checksum = float((a @ a).sum())


        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(64, 64)

            def forward(self, x):
                return self.linear(x) @ x.T


        def inputs():
            return (torch.randn(128, 64),)
    ''')

    result = await service.export(spec_for(tmp_path, "threads.py", timeout=60, verify=True))

    assert result.status == "ok", result.findings
    assert not any(f.code == "timeout" for f in result.findings)


CUSTOM_OP_SOURCE = '''
import torch


@torch.library.custom_op("mylib::op", mutates_args=())
def my_op(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@my_op.register_fake
def _(x):
    return torch.empty_like(x)


class Model(torch.nn.Module):
    def forward(self, x):
        return my_op(x) + 1  # the custom op


def inputs():
    return (torch.randn(2, 3),)
'''


async def test_two_targets_registering_the_same_custom_op_both_export(service, tmp_path):
    first = write_model(tmp_path, "first.py", CUSTOM_OP_SOURCE)
    second = write_model(tmp_path, "second.py", CUSTOM_OP_SOURCE.replace("x + 1", "x * 2"))

    results = [await service.export(spec_for(tmp_path, "first.py")),
               await service.export(spec_for(tmp_path, "second.py"))]

    for path, result in zip((first, second), results):
        [finding] = result.findings
        # The op has no ONNX translation; what matters here is that registering it a second
        # time (in a fresh child) is no error.
        assert finding.code == "unsupported-op", finding
        assert "mylib" in finding.message
        assert "already" not in finding.message
        assert (finding.location.file, finding.location.line) == (str(path), line_of(path, "the custom op"))
