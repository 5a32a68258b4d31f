"""Documents layer: manuscripts and PDFs (structure, citation markers, references, missing citations).

Public API (import it from its module, so ``import assistant.documents`` stays cheap):
``pdf.parse_pdf``, ``draft.parse_draft``, ``importer.import_pdf``,
``manuscript.find_missing_citations``, ``textops`` (editor text operations), ``bibfile`` (safe
``.bib`` appends) and the dataclasses of :mod:`assistant.documents.model`.
"""
