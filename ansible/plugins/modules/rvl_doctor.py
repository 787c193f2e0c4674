#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) rvl contributors
# MIT or Apache-2.0, at your option (LICENSE-MIT, LICENSE-APACHE in the rvl repository)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: rvl_doctor
short_description: Check an RK3588 board's open GPU stack with rvl doctor
version_added: 0.1.0
description:
  - Runs C(rvl doctor --json) on the target and returns its document as the fact C(rvl_doctor).
  - The doctor checks, one by one, whether the board can run Mesa's panvk Vulkan driver on the
    mainline panthor kernel driver, and names the fix for each problem.
  - Failing checks are a result, not a task failure (see C(healthy), C(problems) and the
    fact's C(exit_code)); the task fails only when rvl itself cannot run the checks (a bad
    profile or manifest file, a usage error).
author:
  - rvl contributors (!UNKNOWN)
extends_documentation_fragment:
  - rvl.fleet.system
options:
  only:
    description:
      - Run only these checks (ids as C(rvl doctor --list-checks) prints them).
    type: list
    elements: str
  no_vulkan:
    description:
      - Do not load the Vulkan loader (the C(vulkan-device) check is skipped).
    type: bool
    default: false
  strict:
    description:
      - Count warnings as failures for the document's C(exit_code) and C(healthy).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: The doctor only reads; it runs the same in check mode.
  diff_mode:
    support: none
    description: The doctor changes nothing, so there is nothing to show.
  facts:
    support: full
    description: The document is returned as the fact C(rvl_doctor).
notes:
  - rvl's JSON schema is its docs/json.md; this module reads schema_version 1.
seealso:
  - module: rvl.fleet.rvl_setup
'''

EXAMPLES = r'''
- name: Check the board
  rvl.fleet.rvl_doctor:
    board: turing-rk1

- name: Fail when a check fails
  ansible.builtin.assert:
    that: rvl_doctor.exit_code == 0
    fail_msg: "{{ rvl_doctor.checks | selectattr('status', 'equalto', 'fail') | map(attribute='fix') | list }}"
'''

RETURN = r'''
ansible_facts:
  description: The doctor's document.
  returned: always
  type: complex
  contains:
    rvl_doctor:
      description:
        - rvl doctor's JSON document (C(board), C(kernel), C(summary), C(checks), C(inventory),
          C(exit_code)).
      type: dict
      returned: always
healthy:
  description: No check failed (nor warned, with O(strict)).
  returned: always
  type: bool
problems:
  description: The checks that failed or warned, each with its id, status, summary and fix.
  returned: always
  type: list
  elements: dict
  sample: [{"id": "kernel", "status": "fail", "summary": "vendor BSP kernel 6.1.75-npu-port", "fix": "sudo rvl setup --only kernel"}]
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rvl.fleet.plugins.module_utils.rvl import (
    SYSTEM_ARGS,
    fail_on_error,
    run_json,
    rvl_binary,
    system_argv,
)


def main():
    argument_spec = dict(SYSTEM_ARGS)
    argument_spec.update(
        only=dict(type='list', elements='str'),
        no_vulkan=dict(type='bool', default=False),
        strict=dict(type='bool', default=False),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    p = module.params
    argv = [rvl_binary(module), 'doctor', '--json'] + system_argv(p)
    if p['only']:
        argv += ['--only', ','.join(p['only'])]
    if p['no_vulkan']:
        argv.append('--no-vulkan')
    if p['strict']:
        argv.append('--strict')
    rc, doc, err = run_json(module, argv)
    fail_on_error(module, rc, doc, argv, err)
    problems = [
        dict(id=c.get('id'), status=c.get('status'), summary=c.get('summary'), fix=c.get('fix'))
        for c in doc.get('checks', [])
        if c.get('status') in ('fail', 'warn')
    ]
    module.exit_json(
        changed=False,
        ansible_facts=dict(rvl_doctor=doc),
        healthy=doc.get('exit_code') == 0,
        problems=problems,
    )


if __name__ == '__main__':
    main()
