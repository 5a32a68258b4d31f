"""Documents layer: manuscripts and PDFs (structure, citation markers, references, missing citations).

Public API (import it from its module, so ``import assistant.documents`` stays cheap):
``pdf.parse_pdf``, ``draft.parse_draft``, ``manuscript.find_missing_citations``, ``textops``
(editor text operations) and the dataclasses of :mod:`assistant.documents.model`. It reads
documents and knows no library: adding a PDF to the library, linking references to library
papers and ``.bib`` files are the library's (``library/importers/pdf.py``, ``library/linking.py``,
``library/bibfile.py``, ``library/bibsync.py``).
"""
