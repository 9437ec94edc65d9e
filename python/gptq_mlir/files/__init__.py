"""Files: readers of untrusted inputs (:mod:`.inputs`) and outputs written
whole or not at all (:mod:`.outputs`).
"""
