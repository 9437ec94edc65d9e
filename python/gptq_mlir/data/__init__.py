"""Text and tokens: corpora and calibration windows (:mod:`.corpus`), the
llama2.c tokenizer (:mod:`.tokenizer`) and Hugging Face's (:mod:`.hf_tokenizer`).
"""
