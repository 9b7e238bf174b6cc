"""An x-transformers XTransformer (encoder-decoder, as for translation) with rotary positions in
the decoder and a source padding mask; source and target lengths dynamic."""

import torch
from torch.export import Dim
from x_transformers import XTransformer


def build_model():
    torch.manual_seed(0)
    return XTransformer(
        dim=64, tie_token_emb=True,
        enc_num_tokens=256, enc_depth=1, enc_heads=4, enc_max_seq_len=128,
        dec_num_tokens=256, dec_depth=1, dec_heads=4, dec_max_seq_len=128, dec_rotary_pos_emb=True,
    ).eval()


def example_inputs():
    torch.manual_seed(0)
    src = torch.randint(0, 256, (2, 20))
    tgt = torch.randint(0, 256, (2, 16))
    mask = torch.ones(2, 20, dtype=torch.bool)
    mask[1, 15:] = False
    return (src, tgt), {"mask": mask}


def dynamic_shapes():
    batch = Dim("batch")
    return {"src": {0: batch, 1: Dim("src_len")}, "tgt": {0: batch, 1: Dim("tgt_len")},
            "mask": {0: batch, 1: Dim("src_len")}}
