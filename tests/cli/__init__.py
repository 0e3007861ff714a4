"""CLI acceptance tests: render, runtimes, explain, --output-dir, workers (-j), start-up."""
