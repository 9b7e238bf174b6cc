"""The connection to the editor: LSP's base protocol read from stdio (framing.py), the JSON-RPC
answers the spec asks for (json_rpc.py) and pygls' LanguageServer that carries them (server.py).

Knows no feature and no export: what travels, not what it means.
"""
