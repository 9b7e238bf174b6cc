"""The same BERT behind the user's own helper function: the value comes from the helper's line."""

from torch import nn

from bert_train import build_model as build_bert


def encode(bert, input_ids):
    return bert(input_ids).last_hidden_state


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.bert = build_bert()
        self.head = nn.Linear(32, 5)

    def forward(self, input_ids):
        hidden = encode(self.bert, input_ids)
        return self.head(hidden)


def build_model():
    return Tagger()
