# -*- Python -*-
"""Runs the GoogleTest unit tests under lit, one lit test per test case."""

import os

import lit.formats

config.name = "GPTQ-Unit"
config.suffixes = []
config.test_source_root = os.path.join(config.gptq_obj_root, "unittests")
config.test_exec_root = config.test_source_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
