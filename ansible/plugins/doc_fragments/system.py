# -*- coding: utf-8 -*-
# Copyright (c) rvl contributors
# MIT or Apache-2.0, at your option (LICENSE-MIT, LICENSE-APACHE in the rvl repository)

from __future__ import annotations


class ModuleDocFragment:
    """The options every rvl.fleet module takes: rvl's flags for the system it looks at."""

    DOCUMENTATION = r'''
options:
  rvl:
    description:
      - The rvl executable, a path or a name looked up on the target's PATH.
    type: str
    default: rvl
  root:
    description:
      - The file-system root rvl works on (C(--root)), for example a mounted image or a fake
        tree in tests. Changing C(/) needs root, so use C(become) there.
    type: path
    default: /
  board:
    description:
      - The board profile (C(boltzmann), C(ampere), C(turing-rk1), ...) instead of detecting the
        board from its device tree (C(--board)).
    type: str
  profiles:
    description:
      - A directory of board profiles that replaces the built-in set (C(--profiles)).
    type: path
  manifest:
    description:
      - An artifact manifest that replaces the built-in one (C(--manifest)), which pins
        firmware, Mesa and llama.cpp; the doctor recognises firmware by it.
    type: path
'''
