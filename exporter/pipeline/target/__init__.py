"""A wing of the pipeline: the target's code and model as loaded — fresh imports of its code
(code.py), the random fills kept from its previous export, the files it opens, the modules it
looked for and did not find, whether its weights have data.

Imports no stage (pipeline/stages/; tests/test_layout.py).
"""
