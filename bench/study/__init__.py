"""The learned ranker's pipeline: cached dev-set legs, fusion and ranking studies."""
