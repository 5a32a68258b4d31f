"""Citation-recommendation layer: indexes, BM25, fusion, the pipeline."""
