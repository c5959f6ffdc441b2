"""Semantic Kernel tests run offline against a scripted chat completion service; SK's own
logging (which reports every caught function error at ERROR level) is silenced."""

from __future__ import annotations

import logging

logging.getLogger("semantic_kernel").setLevel(logging.CRITICAL)
