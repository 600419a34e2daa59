"""Diagnosis of capacity use: figures from the capacity records, the engine, advice and text rendering."""
