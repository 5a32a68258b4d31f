"""The Cite-Assist language server (``assistant lsp``): citation completion, hover, diagnostics,
go to definition and code actions for LaTeX and Markdown manuscripts in any LSP editor.

Modules: ``server`` (pygls server, threads, documents, features), ``commands`` (executeCommand
handlers), ``navigation`` (references, rename, symbols, .bib diagnostics; logic in ``refs``),
``framing`` (the stdin frame reader that survives any bytes), ``completion``, ``hover``,
``diagnostics``, ``actions`` (code actions), ``bibfiles`` (locating, indexing and editing the
manuscript's .bib), ``citations`` (citation slots and keys by offset), ``edits`` (workspace edits),
``text`` (documents, positions), ``protocol`` (JSON-RPC error handling) and ``backend`` (the one
adapter to the product's core). No Qt; click only in ``assistant.cli.lsp``.
"""
