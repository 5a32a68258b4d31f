"""`bench query` takes its ACM-CR queries as the product builds them (each with the abbreviations
its own citing paper defines)."""

from assistant.evaluation.acm_cr import manuscript_abbreviations
from assistant.evaluation.acm_cr_data import load_collection
from assistant.service.bench import acm_cr_queries


def test_acm_cr_queries_carry_their_citing_papers_abbreviations(acm_dev_dir):
    queries = acm_cr_queries(acm_dev_dir, 60)
    assert len(queries) == 60
    assert all(q.text for q in queries)
    defined = set()
    for paper in load_collection(acm_dev_dir):
        defined |= set(manuscript_abbreviations(paper).items())
    carried = {pair for q in queries for pair in q.abbreviations}
    assert carried and carried <= defined  # (an AttributeError on q.paper_id before)
