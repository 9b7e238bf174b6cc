"""The rules of server/fixits/model_usage.py and server/fixits/workspace_models.py on small workspaces of our
own, one rule each (the real repositories are in test_repositories.py): which statements a
recipe may copy and which make a site incomplete, where usage is read (scripts, tests, README
blocks, doctests), which call gives the example inputs, and which classes are parts."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from onnxlens.server.fixits.edits import apply_insertions
from onnxlens.server.fixits.new_targets import plan_targets
from onnxlens.server.fixits.workspace_scan import workspace_choices
from tests.support.workspace import write

MODEL = '''from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class NetConfig:
    vocab_size: int = 50
    width: int = 8


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(x)


class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.width)
        self.block = Block(config.width)

    def forward(self, idx):
        return self.block(self.embed(idx))
'''


def _init(root: Path) -> tuple[set[str], dict[str, str]]:
    fix = plan_targets(root, workspace_choices(root).choices)
    texts = {}
    for file in dict.fromkeys(i.file for i in fix.insertions):
        path = Path(file)
        texts[path.relative_to(root.resolve()).as_posix()] = apply_insertions(
            path.read_text() if path.exists() else "", [i for i in fix.insertions if i.file == file])
    return {t.candidate.name for t in fix.targets}, texts


def test_a_site_that_loads_a_checkpoint_is_no_recipe_but_tells_the_config_class(tmp_path):
    write(tmp_path / "model.py", MODEL.replace("class NetConfig", "class Settings").replace("NetConfig", "Settings"))
    write(tmp_path / "sample.py", "import torch\nfrom model import Net, Settings\n\n"
                                  "checkpoint = torch.load('ckpt.pt')\nconf = Settings(**checkpoint['args'])\n"
                                  "model = Net(conf)\n")
    names, texts = _init(tmp_path)
    assert names == {"Net"}  # Block is built in Net.__init__: a part
    model = texts["model.py"]
    assert "    return Net(config=Settings()).eval()\n" in model  # the class sample.py passes, its defaults
    assert "torch.load" not in model
    assert "    idx = torch.randint(0, 50, (2, 16))" in model  # Settings.vocab_size's default


def test_a_readme_block_is_a_recipe_and_its_values_size_the_ids(tmp_path):
    write(tmp_path / "model.py", MODEL)
    write(tmp_path / "README.md", "# Net\n\n```python\nfrom model import Net, NetConfig\nconf = NetConfig()\n"
                                  "conf.vocab_size = 300\nnet = Net(conf)\n```\n")
    _, texts = _init(tmp_path)
    model = texts["model.py"]
    assert "built as README.md:7 builds it" in model
    assert "    conf = NetConfig()\n    conf.vocab_size = 300\n    return Net(conf).eval()\n" in model
    assert "    idx = torch.randint(0, 300, (2, 16))" in model


def test_a_test_files_call_gives_the_inputs_without_its_device(tmp_path):
    write(tmp_path / "model.py", MODEL)
    write(tmp_path / "tests" / "test_net.py", "import torch\nfrom model import Net, NetConfig\n\n\n"
                                              "def test_net():\n    device = 'cuda'\n"
                                              "    net = Net(NetConfig(vocab_size=20))\n"
                                              "    tokens = torch.zeros((1, 5), dtype=torch.long, device=device)\n"
                                              "    assert net(tokens).shape == (1, 5, 8)\n")
    _, texts = _init(tmp_path)
    model = texts["model.py"]
    assert "    return Net(NetConfig(vocab_size=20)).eval()\n" in model  # from tests/test_net.py:7
    assert "    tokens = torch.zeros((1, 5), dtype=torch.long)\n    return (tokens,)\n" in model
    assert "tests/test_net.py:9 calls it" in model  # the call, not the construction


def test_a_doctest_is_read_and_a_reassigned_model_is_not_called_for_inputs(tmp_path):
    write(tmp_path / "model.py", MODEL.replace('''class Net(nn.Module):
''', '''class Net(nn.Module):
    """A net.

    >>> net = Net(NetConfig(width=4))
    >>> net = torch.compile(net)
    >>> net(torch.zeros(2, 3, dtype=torch.long)).shape
    """
'''))
    _, texts = _init(tmp_path)
    model = texts["model.py"]
    assert "    return Net(NetConfig(width=4)).eval()\n" in model
    assert "calls it" not in model and "    idx = torch.randint(0, 50, (2, 16))" in model


def test_a_part_by_reference_and_a_part_built_on_its_own(tmp_path):
    write(tmp_path / "layers.py", '''from torch import nn


class Norm(nn.Module):
    def forward(self, x):
        return x


class Mixer(nn.Module):
    def forward(self, x):
        return x * 2
''')
    write(tmp_path / "model.py", '''import torch
from torch import nn
from layers import Mixer, Norm


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        norm_class = Norm  # used, not called, here
        self.norm = norm_class()
        self.mix = Mixer()

    def forward(self, x):
        return self.mix(self.norm(x))


if __name__ == "__main__":
    mixer = Mixer()  # built on its own too: a model of its own
    print(mixer(torch.randn(3, 4)))
''')
    names, texts = _init(tmp_path)
    assert names == {"Model", "Mixer"}
    assert "    x = torch.randn(3, 4)\n    return (x,)\n" not in texts["layers.py"]  # an inline argument
    assert "model.py:19 calls it" in texts["layers.py"] and "torch.randn(3, 4)" in texts["layers.py"]


def test_malformed_doctests_and_bare_annotations_are_no_usage(tmp_path):
    """Read off diffusers (a docstring holding a `>>>>>>> main` merge marker: doctest's parser
    raises ValueError) and monai (`x: int` before a call that passes x): no recipe, no crash."""
    write(tmp_path / "model.py", MODEL.replace('''class Net(nn.Module):
''', '''class Net(nn.Module):
    """Merged badly.

    >>> net = Net(NetConfig())
>>>>>>> main
    """
'''))
    write(tmp_path / "run.py", "from model import Net, NetConfig\n\n\ndef main():\n    conf: NetConfig\n"
                               "    return Net(conf)\n")
    names, texts = _init(tmp_path)
    assert names == {"Net"}
    assert "    return Net(config=NetConfig()).eval()\n" in texts["model.py"]  # from the signature


@pytest.mark.slow  # reads a large installed package whole
def test_init_reads_a_large_real_package_without_failing(tmp_path):
    """monai (the zoo extra), read as a workspace: every candidate planned, each factory parses."""
    spec = importlib.util.find_spec("monai")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("monai is not installed (the `zoo` extra)")
    root = tmp_path / "monai"
    shutil.copytree(list(spec.submodule_search_locations)[0], root, ignore=shutil.ignore_patterns("__pycache__"))
    _, texts = _init(root)
    assert len(texts) > 50
    for name, text in texts.items():
        if name.endswith(".py"):
            compile(text, name, "exec")


def test_a_re_export_leads_to_its_own_module_only(tmp_path):
    """`from pkg import Net` is pkg/nets.py's Net when pkg/__init__.py re-exports it from there:
    another module of the package that defines a Net of its own does not get that site (read
    off vit-pytorch: `from vit_pytorch import ViT` is vit.py's, not mp3.py's)."""
    write(tmp_path / "pkg" / "__init__.py", "from pkg.nets import Net\n")
    write(tmp_path / "pkg" / "nets.py", MODEL)
    write(tmp_path / "pkg" / "other.py", MODEL.replace("class Net(", "class Net(").replace("vocab_size: int = 50",
                                                                                       "vocab_size: int = 51"))
    write(tmp_path / "pkg" / "demo.py", "from pkg import Net, NetConfig\n\n"
                                        "if __name__ == '__main__':\n    net = Net(NetConfig(width=6))\n")
    _, texts = _init(tmp_path)
    assert "    return Net(NetConfig(width=6)).eval()\n" in texts["pkg/nets.py"]
    assert "width=6" not in texts["pkg/other.py"]


def test_names_a_main_block_binds_are_imported_by_the_factory(tmp_path):
    write(tmp_path / "model.py", MODEL)
    write(tmp_path / "wrapper.py", '''import torch
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, idx):
        return self.net(idx)


if __name__ == "__main__":
    from model import Net, NetConfig
    wrapped = Wrapper(Net(NetConfig()))
''')
    _, texts = _init(tmp_path)
    builder = texts["wrapper.py"].split("def build_wrapper():\n")[1]
    assert "    from model import Net\n" in builder and "    from model import NetConfig\n" in builder
    assert "    return Wrapper(Net(NetConfig())).eval()\n" in builder


def test_kwargs_passed_to_the_base_bring_its_parameters_and_methods_carry_token_ids(tmp_path):
    """Read off x-transformers (`Decoder(**kwargs)` → `AttentionLayers.__init__(dim, ...)`) and
    open-clip (`forward(text)` → `self._embeds(text)` → `self.token_embedding(text)`)."""
    write(tmp_path / "layers.py", '''import torch
from torch import nn


class Layers(nn.Module):
    def __init__(self, dim, vocab=64, causal=False):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, dim)

    def _embeds(self, text):
        return self.token_embedding(text.long())

    def forward(self, text):
        return self._embeds(text)


class Decoder(Layers):
    def __init__(self, **kwargs):
        super().__init__(causal=True, **kwargs)
''')
    names, texts = _init(tmp_path)
    assert names == {"Layers", "Decoder"}
    layers = texts["layers.py"]
    assert "    return Decoder(dim=...).eval()\n" in layers  # dim: Layers' required parameter
    assert "build_decoder: give Decoder's constructor arguments: dim" in layers
    assert layers.count("    text = torch.randint(0, 64, (2, 16))") == 2  # vocab's default


def test_an_image_size_makes_a_2d_image_only(tmp_path):
    write(tmp_path / "models.py", '''import torch
from torch import nn


class Image(nn.Module):
    def __init__(self, image_size=64, channels=4):
        super().__init__()
        self.conv = nn.Conv2d(channels, 8, 3)

    def forward(self, img):
        return self.conv(img)


class Tubelets(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv3d(channels, 8, 3)

    def forward(self, video):
        return self.conv(video)


class Video(nn.Module):
    def __init__(self, image_size=64, channels=4):
        super().__init__()
        self.tubelets = Tubelets(channels)  # the Conv3d is in a part (vit-pytorch's cct_3d)

    def forward(self, video):
        return self.tubelets(video)


class Clip(nn.Module):
    def __init__(self, image_size=64, frames=8):
        super().__init__()
        self.proj = nn.Linear(64, 8)

    def forward(self, clip):
        return self.proj(clip)
''')
    _, texts = _init(tmp_path)
    models = texts["models.py"]
    assert "    img = torch.randn(2, 4, 64, 64)  # batch 2; image_size=64, channels=4\n" in models
    assert "    video = torch.randn(2, 8)  # TODO" in models
    assert "    clip = torch.randn(2, 64)  # batch 2; the first nn.Linear takes 64\n" in models  # frames: no image
