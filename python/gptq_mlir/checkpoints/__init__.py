"""GPTQ checkpoints in the layout inference engines load (:mod:`.gptq`)."""
