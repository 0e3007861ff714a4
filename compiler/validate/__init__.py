"""The validate application (`tjc validate`, and `tjc render` before it compiles): input sources
in, located diagnostics out, for every document (`documents`), with the upstream quirks a user
would not expect (`quirks`) and the report formats (`report`: text, `sarif`, `github`;
`locations`). The admission rules themselves are in `compiler.core.admission`.
"""
