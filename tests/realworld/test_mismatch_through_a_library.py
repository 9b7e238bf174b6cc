"""A mismatch warning stays in the workspace, and its chain reaches the library
call that computed the value.

transformers' BERT in training mode (as a user who forgot `.eval()` exports it): attention
dropout is on, torch and onnxruntime draw different masks, and the first value past tolerance is
the attention output. Responsible line, found by hand: the FX node the verification names
(`aten.scaled_dot_product_attention`, module `encoder.layer.0.attention.self`) was traced back by
reading transformers 5.23's source: BertSelfAttention.forward calls `attention_interface(...)`,
which for the default "sdpa" implementation is `sdpa_attention_forward` in
transformers/integrations/sdpa_attention.py, whose `torch.nn.functional.scaled_dot_product_attention(`
call (with `dropout_p=dropout`) computes the value; switching the model to `.eval()` makes the
mismatch go away.

* target `bert`: the factory returns BertModel itself, so no line of the workspace computed the
  value. The innermost frame is modeling_bert.py (site-packages), at BertSelfAttention.forward's
  call of the helper, which torch records as the last frame: the warning must stay in the
  workspace and its chain reach past that call, into the helper.
* target `tagger`: the user's helper `encode` calls the model. torch records only `forward`
  frames, so forward's call of the helper is all it names: the warning must be on the helper's
  line.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from tests.realworld.harness import (SITE, check_json, copy_workspace, diagnostics, library_line, lsp_related,
                                  lsp_session, primary, related_lines)
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models through onnxlens check and the language server

# The call inside transformers' helper that computed the diverging value (by hand, see above).
SDPA_CALL = library_line("transformers/integrations/sdpa_attention.py",
                         "attn_output = torch.nn.functional.scaled_dot_product_attention(")
# BertSelfAttention.forward's call of the helper: the last frame torch records.
HELPER_CALL = library_line("transformers/models/bert/modeling_bert.py",
                           "attn_output, attn_weights = attention_interface(")


def _factory_line(workspace):
    path = workspace / "bert_train.py"
    return str(path.resolve()), line_of(path, "def build_model():")


def _helper_line(workspace):
    path = workspace / "tagger.py"
    return str(path.resolve()), line_of(path, "return bert(input_ids).last_hidden_state")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return copy_workspace("bert_training", tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def checked(workspace):
    return check_json(workspace)


def _mismatch(found):
    (mismatch,) = [d for d in found if d["code"] == "mismatch"]
    return mismatch


def test_check_keeps_a_library_models_mismatch_in_the_workspace_with_the_library_call_related(checked, workspace):
    mismatch = _mismatch(diagnostics(checked, "bert"))
    assert mismatch["severity"] == "warning"
    assert primary(mismatch, workspace) == _factory_line(workspace)
    assert not mismatch["file"].startswith(str(SITE))
    assert "shown at the model's definition" in mismatch["message"]
    assert "`encoder.layer.0.attention.self` (BertSelfAttention)" in mismatch["message"]
    related = related_lines(mismatch, workspace)
    assert SDPA_CALL in related and HELPER_CALL in related, mismatch["related"]
    assert mismatch["related"][0]["line"] == SDPA_CALL[1]  # innermost first: the call that computed it


def test_check_puts_a_mismatch_computed_through_a_user_helper_on_the_helpers_line(checked, workspace):
    mismatch = _mismatch(diagnostics(checked, "tagger"))
    assert primary(mismatch, workspace) == _helper_line(workspace)
    tagger = workspace / "tagger.py"
    related = related_lines(mismatch, workspace)
    assert (str(tagger.resolve()), line_of(tagger, "hidden = encode(self.bert, input_ids)")) in related
    assert SDPA_CALL in related


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    client = await lsp_session(copy_workspace("bert_training", tmp_path_factory.mktemp("bert-lsp")), ["bert", "tagger"])
    yield client
    await client.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_language_server_shows_both_mismatches_in_the_workspace(client):
    path, line = _factory_line(client.root)
    bert = await client.wait_diagnostic(client.root / "bert_train.py", "mismatch", line)
    assert SDPA_CALL in lsp_related(bert), bert.related_information
    path, line = _helper_line(client.root)
    tagger = await client.wait_diagnostic(client.root / "tagger.py", "mismatch", line)
    assert SDPA_CALL in lsp_related(tagger), tagger.related_information
    assert not any(str(path).startswith(str(SITE)) for path in client.all_diagnostics())
