"""Training pairs the library itself provides (self-supervised), with hard negatives.

Query kinds (each maps a query text to one positive paper of the library):
- ``ict``: inverse cloze — one sentence of a paper's abstract; the positive's text is
  the paper with that sentence removed, so the match cannot be a copy;
- ``title``: the title alone → its paper (text without the title);
- ``keywords``: the author keywords → its paper;
- ``citation``: a citation context of an imported manuscript → the cited paper;
- ``context``: a real citation context from outside the library (e.g. the citectx files) → its
  cited paper, which joins the corpus under a negative id (:func:`add_external_papers`).

Papers whose DOI is in the ACM-CR blacklist are never used (neither as query, positive
nor negative), nor are citation contexts of blacklisted papers or of the ACM-CR dev PDFs
(the evaluation set).
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from assistant.documents.markers import strip_citation_markers as strip_markers

# one marker stripper / sentence splitter for queries at training and at recommendation time
from assistant.documents.sentences import sentences as split_sentences
from assistant.library.models import TITLE_ABSTRACT_SEP, Citation, Paper
from assistant.library.normalize import normalize_doi, title_key
from assistant.progress import Progress, ProgressEvent

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")

#: A candidate function: query text, k -> paper ids best first (the prefilter's ranking).
CandidateFn = Callable[[str, int], list[int]]


#: names the research data folder (SciCite, citectx, ACM-CR) the training commands may read
SHARED_DATA_ENV = "ASSISTANT_SHARED_DATA"


def shared_data_dir() -> Path | None:
    """The research data folder named by ``$ASSISTANT_SHARED_DATA``; None when unset (the
    product has no default beside its checkout: commands take explicit paths, tools/ guess)."""
    value = os.environ.get(SHARED_DATA_ENV)
    return Path(value) if value else None


def load_blacklist(path: Path | str | None = None) -> set[str]:
    """Normalised DOIs never trained on (e.g. the ACM-CR citing papers: the training commands'
    ``--blacklist``); none without a file, an empty set with a warning for a missing one."""
    if not path:
        return set()
    path = Path(path)
    if not path.is_file():
        log.warning("blacklist %s not found: no paper excluded", path)
        return set()
    return {
        normalize_doi(line) for line in path.read_text(encoding="utf-8").split() if line.strip()
    }


@dataclass
class DocRecord:
    """The parts of a paper the trainers need (kept small: 100k of them fit in memory)."""

    id: int
    title: str
    abstract: str
    keywords: list[str]

    def text(self, drop: list[str] | None = None, drop_title: bool = False) -> str:
        """``title [SEP] abstract``, less the sentences in ``drop`` (inverse cloze) or the title."""
        abstract = self.abstract
        if drop:
            abstract = " ".join(s for s in split_sentences(abstract) if s not in drop)
        if drop_title:
            return abstract
        return f"{self.title}{TITLE_ABSTRACT_SEP}{abstract}" if abstract else self.title

    def lexical(self) -> str:
        return " ".join(p for p in (self.title, self.abstract, " ".join(self.keywords)) if p)


@dataclass
class Corpus:
    """The usable papers of a library (title + abstract, not blacklisted) and its citations."""

    docs: dict[int, DocRecord]
    citations: list[Citation] = field(default_factory=list)
    excluded_blacklisted: int = 0
    excluded_no_abstract: int = 0
    excluded_citations: int = 0

    @property
    def ids(self) -> list[int]:
        return list(self.docs)

    def signature(self) -> str:
        """A short hash of the usable papers (id, title, abstract, keywords) and the citation
        pairs: any change to the library that would change the training set changes it."""
        h = hashlib.sha1()
        for pid in sorted(self.docs):
            doc = self.docs[pid]
            record = f"{pid}\x1f{doc.title}\x1f{doc.abstract}\x1f{'; '.join(doc.keywords)}\x1e"
            h.update(record.encode("utf-8", "replace"))
        for citing, cited, context in sorted(
            (c.citing_id, c.cited_id, c.context) for c in self.citations
        ):
            h.update(f"{citing}>{cited}\x1f{context}\x1e".encode("utf-8", "replace"))
        return h.hexdigest()[:16]


def _is_eval_source(paper: Paper) -> bool:
    """True for records imported from the ACM-CR dev set (its PDFs are the evaluation)."""
    for path in (paper.pdf_path, paper.source_file):
        if path and "acm-cr" in str(path).replace("\\", "/").split("/"):
            return True
    return False


def build_corpus(
    papers: Iterable[Paper],
    blacklist: set[str],
    citations_from: Callable[[int], list[Citation]] | None = None,
    min_abstract_chars: int = 80,
) -> Corpus:
    """Collect trainable papers; citation edges from non-blacklisted, non-evaluation manuscripts."""
    docs: dict[int, DocRecord] = {}
    citing_ok: list[int] = []
    n_black = n_short = 0
    for p in papers:
        if p.id is None:
            continue
        if normalize_doi(p.doi) in blacklist:
            n_black += 1
            continue
        if _is_eval_source(p):
            n_black += 1
            continue
        citing_ok.append(p.id)
        if len((p.abstract or "").strip()) < min_abstract_chars or not (p.title or "").strip():
            n_short += 1
            continue
        docs[p.id] = DocRecord(p.id, p.title.strip(), p.abstract.strip(), list(p.keywords or []))
    citations: list[Citation] = []
    n_cit_excluded = 0
    if citations_from is not None:
        for pid in citing_ok:
            for c in citations_from(pid):
                if c.cited_id in docs and (c.context or "").strip():
                    citations.append(c)
                else:
                    n_cit_excluded += 1
    return Corpus(docs, citations, n_black, n_short, n_cit_excluded)


def corpus_from_library(library, blacklist: set[str], min_abstract_chars: int = 80) -> Corpus:
    """``build_corpus`` over a :class:`assistant.library.store.Library`."""
    return build_corpus(
        library.iter_papers(), blacklist, library.citations_from, min_abstract_chars
    )


@dataclass
class PseudoQuery:
    text: str
    positive: int
    kind: str  # ict | title | keywords | citation | context
    drop: list[str] | None = None
    drop_title: bool = False
    title_only: bool = False  # the positive has no abstract: negatives are shown as titles too


#: shares of inverse-cloze, title and keyword pseudo-queries (a paper with < 2 keywords gives a title query)
DEFAULT_QUERY_MIX = (0.75, 0.1, 0.15)


def make_queries(
    corpus: Corpus,
    n_queries: int,
    rng: random.Random,
    mix: tuple[float, float, float] = DEFAULT_QUERY_MIX,
) -> list[PseudoQuery]:
    """Pseudo-queries: every citation context, then ICT/title/keyword queries up to ``n_queries``.

    ``mix``: the shares (ict, title, keywords) of the pseudo-queries.
    """
    queries = [
        PseudoQuery(strip_markers(c.context), c.cited_id, "citation") for c in corpus.citations
    ]
    queries = [q for q in queries if len(q.text) >= 20]
    ids = [i for i in corpus.ids if i >= 0]  # papers from outside the library get none
    rng.shuffle(ids)
    i = 0
    while len(queries) < n_queries and ids:
        doc = corpus.docs[ids[i % len(ids)]]
        i += 1
        if i > 4 * max(n_queries, len(ids)):
            break
        r = rng.random()
        if r < mix[2] and len(doc.keywords) >= 2:
            kws = list(doc.keywords)
            rng.shuffle(kws)
            queries.append(PseudoQuery(", ".join(kws[:6]), doc.id, "keywords"))
        elif r < mix[2] + mix[1]:
            queries.append(PseudoQuery(doc.title, doc.id, "title", drop_title=True))
        else:
            # 1-3 consecutive sentences (citation contexts run from a clause to a paragraph)
            sents = split_sentences(doc.abstract)
            span = rng.choices((1, 2, 3), weights=(0.6, 0.3, 0.1))[0]
            span = min(span, len(sents) - 2)
            if span < 1:
                continue
            start = rng.randrange(0, len(sents) - span + 1)
            picked = sents[start : start + span]
            if not 6 <= sum(len(s.split()) for s in picked) <= 120:
                continue
            queries.append(PseudoQuery(" ".join(picked), doc.id, "ict", drop=picked))
    return queries[: max(n_queries, len(corpus.citations))]


@dataclass
class ExternalPair:
    """A citation context and the paper it cites, from outside the library."""

    context: str
    title: str
    abstract: str = ""  # empty when unknown or not trusted


def add_external_papers(corpus: Corpus, pairs: Iterable[ExternalPair]) -> list[PseudoQuery]:
    """Add the cited papers of ``pairs`` to ``corpus`` (negative ids, one per normalised title,
    the first trusted abstract kept) and return one ``context`` query per pair."""
    by_key: dict[str, int] = {}
    queries: list[PseudoQuery] = []
    for pair in pairs:
        key = title_key(pair.title)
        text = strip_markers(pair.context).strip()
        if not key or len(text) < 20:
            continue
        pid = by_key.get(key)
        if pid is None:
            pid = by_key[key] = -(len(by_key) + 1)
            corpus.docs[pid] = DocRecord(pid, pair.title.strip(), pair.abstract.strip(), [])
        elif pair.abstract and not corpus.docs[pid].abstract:
            corpus.docs[pid].abstract = pair.abstract.strip()
        queries.append(PseudoQuery(text, pid, "context"))
    for q in queries:
        q.title_only = not corpus.docs[q.positive].abstract
    return queries


def interleave_candidates(
    *sources: Callable[[list[str], int], list[list[int]]],
) -> Callable[[list[str], int], list[list[int]]]:
    """One candidate function from several: their rankings merged rank by rank."""

    def batch(queries: list[str], k: int) -> list[list[int]]:
        out = []
        for rows in zip(*(source(queries, k) for source in sources)):
            merged: dict[int, None] = {}
            for rank in range(max((len(r) for r in rows), default=0)):
                for r in rows:
                    if rank < len(r):
                        merged.setdefault(r[rank])
            out.append(list(merged))
        return out

    return batch


class Bm25Candidates:
    """Prefilter stand-in: BM25 (bm25s) over the corpus' lexical text."""

    def __init__(self, corpus: Corpus, ids: list[int] | None = None):
        import bm25s

        self.ids = ids if ids is not None else corpus.ids
        texts = [corpus.docs[i].lexical() for i in self.ids]
        self.retriever = bm25s.BM25()
        self.retriever.index(
            bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False
        )

    def batch(self, queries: list[str], k: int) -> list[list[int]]:
        import bm25s

        k = min(k, len(self.ids))
        tokens = bm25s.tokenize(queries, stopwords="en", show_progress=False)
        docs, _scores = self.retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [[self.ids[j] for j in row] for row in docs.tolist()]


def prefilter_candidates(
    library, corpus: Corpus, use_index: bool = True
) -> Callable[[list[str], int], list[list[int]]]:
    """The library's real fused prefilter when its index exists, else BM25 over the corpus.

    ("Strict" regime: negatives are what the first stage really retrieves for the query.)
    """
    if use_index and library is not None:
        try:
            from assistant.retrieval.pipeline import Recommender
            from assistant.retrieval.pipeline import prefilter_candidates as real

            recommender = Recommender(library)

            def batch(queries: list[str], k: int) -> list[list[int]]:
                return [[int(pid) for pid, _ in real(recommender, q, k)] for q in queries]

            batch(["retrieval test query"], 5)
            log.info("hard negatives from the library's fused prefilter")
            return batch
        except Exception as exc:  # no index yet / out of date: fall back and say why
            log.warning(
                "fused prefilter unavailable (%s); hard negatives from BM25 over the corpus", exc
            )
    return Bm25Candidates(corpus, [i for i in corpus.ids if i >= 0]).batch


def add_negatives(
    queries: list[PseudoQuery],
    corpus: Corpus,
    candidates: Callable[[list[str], int], list[list[int]]],
    n_hard: int,
    n_random: int,
    rng: random.Random,
    depth: int = 50,
    batch_size: int = 256,
    progress: Progress | None = None,
) -> list[dict]:
    """One listwise example per query: positive + ``n_hard`` prefilter + ``n_random`` random negatives.

    Negatives never share the positive's (normalised) title, so duplicates are not punished.
    """
    ids = corpus.ids
    out: list[dict] = []
    for start in range(0, len(queries), batch_size):
        chunk = queries[start : start + batch_size]
        ranked = candidates([q.text for q in chunk], depth + 1)
        for q, cand in zip(chunk, ranked):
            pos_key = title_key(corpus.docs[q.positive].title)
            pool = [
                c
                for c in cand
                if c != q.positive
                and c in corpus.docs
                and title_key(corpus.docs[c].title) != pos_key
            ]
            hard = pool[:n_hard] if len(pool) <= n_hard else _biased_sample(pool, n_hard, rng)
            negs = list(hard)
            while len(negs) < n_hard + n_random and len(ids) > len(negs) + 1:
                c = rng.choice(ids)
                if c != q.positive and c not in negs and title_key(corpus.docs[c].title) != pos_key:
                    negs.append(c)
            if not negs:
                continue
            out.append(
                {
                    "q": q.text,
                    "pos": q.positive,
                    "negs": negs,
                    "kind": q.kind,
                    "drop": q.drop,
                    "drop_title": q.drop_title,
                    "title_only": q.title_only,
                    "pos_rank": (cand.index(q.positive) + 1) if q.positive in cand else None,
                }
            )
        if progress:
            progress(
                ProgressEvent(
                    min(start + batch_size, len(queries)),
                    len(queries),
                    "training",
                    "mining hard negatives",
                )
            )
    return out


def _biased_sample(pool: list[int], n: int, rng: random.Random) -> list[int]:
    """Sample from the ranked pool, favouring the top (weights ~ 1/sqrt(rank))."""
    weights = [1.0 / (r + 1) ** 0.5 for r in range(len(pool))]
    chosen: list[int] = []
    idx = list(range(len(pool)))
    while len(chosen) < n and idx:
        j = rng.choices(range(len(idx)), weights=[weights[i] for i in idx])[0]
        chosen.append(pool[idx.pop(j)])
    return chosen
