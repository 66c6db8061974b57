"""Analyses: pure functions from a Trace to results. They never import renderers.

Empty, so that importing one analysis imports only what it needs: Results and its saved form are in results.py,
analyze() (every analysis of one log) in analyze.py.
"""
