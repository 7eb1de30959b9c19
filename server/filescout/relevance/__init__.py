"""Choosing files: filters for getFiles and the stages of findRelevant."""
