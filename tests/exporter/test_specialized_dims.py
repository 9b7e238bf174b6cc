"""Dimensions declared dynamic that the model's code fixes: the finding on the line
that fixed the size — a helper's line included — naming the input, the dimension, its name in
the spec and the size, with the dynamic-shapes factory related; both when torch.export refuses
the dimension (string dims, Dim.DYNAMIC: an error) and when it specializes it (Dim.AUTO: a
warning, the export written).

In code nobody here wrote: transformers' ViT checks the image size against its config
(modeling_vit.py, `if height != self.image_size[0] or width != self.image_size[1]:`, found by
reading it), which fixes a dynamic height and width; no workspace line is on that chain, so the
finding is at the model's definition with that library line related.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (transformers)

MODEL = '''
import torch
from torch import nn


def as_rows(x):
    return x.reshape(16)


class Net(nn.Module):
    def forward(self, x):
        return as_rows(x) * 2


def inputs():
    return (torch.randn(4, 4),)


def named():
    return {"x": {0: "rows"}}


def auto():
    return {"x": {0: torch.export.Dim.AUTO}}
'''


def _export(root: Path, shapes: str):
    path = write(root, "net.py", MODEL)
    return path, shared_pipeline().run(spec_for(root, "net", "net.py:Net", "net.py:inputs", dynamic_shapes=f"net.py:{shapes}"))


def test_a_refused_dimension_is_an_error_on_the_helper_line(tmp_path):
    path, result = _export(tmp_path, "named")
    assert result.status == "failed"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.severity == "error"
    assert finding.location.line == line_of(path, "return x.reshape(16)")
    assert finding.message.startswith("`x` dim 0 (`rows`) is declared dynamic, but this line fixes it to 4")
    assert "inputs['x'].shape[0]" in finding.message  # torch's own words kept
    related = {(Path(r.file).name, r.line) for r in finding.related}
    assert ("net.py", line_of(path, "def named")) in related  # the factory
    assert ("net.py", line_of(path, "return as_rows(x) * 2")) in related  # forward's call of the helper


def test_a_specialized_dimension_is_a_warning_on_the_helper_line(tmp_path):
    path, result = _export(tmp_path, "auto")
    assert result.status == "ok"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.severity == "warning"
    assert finding.location.line == line_of(path, "return x.reshape(16)")
    assert "`x` dim 0 is declared dynamic, but this line fixes it to 4" in finding.message


def test_transformers_vit_fixes_its_image_size(tmp_path):
    write(tmp_path, "vit.py", '''
        import torch
        from transformers import ViTConfig, ViTModel


        def build():
            torch.manual_seed(0)
            config = ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64)
            return ViTModel(config, add_pooling_layer=False).eval()


        def inputs():
            return (torch.randn(2, 3, 32, 32),)


        def shapes():
            return {"pixel_values": {0: "batch", 2: "height", 3: "width"}}
    ''')
    result = shared_pipeline().run(spec_for(tmp_path, "vit", "vit.py:build", "vit.py:inputs", dynamic_shapes="vit.py:shapes"))
    findings = [f for f in result.findings if f.code == "torch-export"]
    assert sorted(f.message.split(" is declared")[0] for f in findings) == [
        "`pixel_values` dim 2 (`height`)", "`pixel_values` dim 3 (`width`)"]
    import transformers.models.vit.modeling_vit as vit
    library = Path(vit.__file__).resolve()
    check = line_of(library, "if height != self.image_size[0] or width != self.image_size[1]:")
    for finding in findings:
        assert "library code fixes it to 32" in finding.message
        assert finding.location.line == line_of(tmp_path / "vit.py", "def build")
        assert (library, check) in {(Path(r.file).resolve(), r.line) for r in finding.related}
