"""The Cite-Assist language server (``assistant lsp``): citation completion, hover, diagnostics,
go to definition and code actions for LaTeX and Markdown manuscripts in any LSP editor.

Modules: ``server`` (pygls server, threads, commands), ``completion``, ``hover``, ``diagnostics``,
``actions`` (code actions), ``bibfiles`` (locating and editing the manuscript's .bib),
``citations`` (citation slots and keys by offset), ``edits`` (workspace edits), ``text``
(documents, positions), ``protocol`` (JSON-RPC error handling) and ``backend`` (the one adapter to
the product's core). No Qt; click only in ``commands``.
"""
