"""``assistant index`` loads the encoder only when a paper must be embedded
(``retrieval.index_encoder``): nothing changed, or a change that is not embedded, costs no ONNX
session; an edited abstract loads it, with the fingerprint the index was checked against."""

from __future__ import annotations

import pytest
from retrieval_helpers import copy_sample_library, sample_library  # noqa: F401

from assistant.config import index_dir_for
from assistant.inference.encoder import plan_encoder
from assistant.library.editing import edit_paper
from assistant.retrieval.index import IndexPaths
from assistant.retrieval.index_encoder import DeferredEncoder, EncoderChangedError
from assistant.service import Service, ServiceSettings


@pytest.fixture
def library_copy(sample_library, tmp_path):
    return copy_sample_library(sample_library, tmp_path)


def test_the_plan_has_the_loaded_encoders_fingerprint(sample_library):
    encoder = sample_library.encoder
    plan = plan_encoder(encoder.name, "cpu", max_length=encoder.max_length)
    assert plan is not None and plan.fingerprint == encoder.fingerprint
    assert (plan.name, plan.dim, plan.max_length) == (encoder.name, encoder.dim, 128)
    assert plan_encoder(encoder.name, "cpu", max_length=64).fingerprint != encoder.fingerprint


def test_an_index_job_loads_the_encoder_only_to_embed(library_copy):
    service = Service(ServiceSettings(db_path=library_copy))
    try:
        report = service.build_index(reload=False)
        assert report.unchanged == report.total > 0 and service._encoder is None
        lib = service.library
        paper = lib.get(sorted(lib.paper_versions())[7])
        edit_paper(lib, paper.id, {"authors": [*paper.authors, "Newcomer, Nina"]})
        report = service.build_index(reload=False)
        assert report.updated == 0 and service._encoder is None  # the text is not embedded
        assert IndexPaths(index_dir_for(library_copy)).read_meta()["versions"]  # yet written
        edit_paper(lib, paper.id, {"abstract": paper.abstract + " New words."})
        report = service.build_index(reload=False)
        assert report.updated == 1 and service._encoder is not None
        assert report.fingerprint == service._encoder.fingerprint
    finally:
        service.close()


def test_a_loaded_encoder_with_another_fingerprint_is_refused(sample_library):
    encoder = sample_library.encoder
    plan = plan_encoder(encoder.name, "cpu", max_length=64)
    deferred = DeferredEncoder(plan, lambda: encoder)
    assert deferred.fingerprint != encoder.fingerprint and not deferred.loaded
    with pytest.raises(EncoderChangedError):
        deferred.encode(["a text"])
