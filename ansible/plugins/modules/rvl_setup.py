#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) rvl contributors
# MIT or Apache-2.0, at your option (LICENSE-MIT, LICENSE-APACHE in the rvl repository)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: rvl_setup
short_description: Move an RK3588 board onto the open GPU stack with rvl setup
version_added: 0.1.0
description:
  - Runs C(rvl setup --yes --json) on the target. rvl computes a plan (kernel, GPU overlay,
    firmware, patched panvk, ICD, render-group access, llama.cpp) and applies it in one
    journaled transaction that it rolls back when a step fails.
  - The task is C(changed) only when the plan was not empty; a second run right after a first
    one plans nothing and reports C(ok).
  - In check mode it runs C(rvl setup --dry-run --json) and changes nothing; in diff mode it
    returns setup's own unified diffs, one per step.
  - A step that fails fails the task with setup's message and exit status (everything that
    run changed has been put back); a blocked step (a kernel that is not installed, no C(dtc))
    fails it with the reason and the fix, after the other steps were applied.
author:
  - rvl contributors (!UNKNOWN)
extends_documentation_fragment:
  - rvl.fleet.system
options:
  only:
    description:
      - Plan only these steps (C(kernel), C(gpu-overlay), C(firmware), C(mesa), C(icd),
        C(access), C(llama-cpp)).
    type: list
    elements: str
  mesa_from:
    description:
      - Where panvk comes from.
    type: str
    choices: [source, prebuilt]
    default: source
  mesa_candidates:
    description:
      - Build panvk with rvl's candidate Mesa patches too (C(rvl setup --mesa-candidates)),
        into a prefix of their own, and register that build. They were measured in rvl's lab
        and not yet run on a G610, so try them on one board first and check it there with
        C(rvl smoke-bench --gguf MODEL), which compares the GPU's results with the CPU's.
        C(false) registers the series-only build again.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Check mode runs C(rvl setup --dry-run), which changes nothing.
  diff_mode:
    support: full
    description: The diffs are the plan's own, per step.
notes:
  - rvl's JSON schema is its docs/json.md; this module reads schema_version 1.
  - Setup changes the next boot; reboot when the C(kernel) or C(gpu-overlay) step ran.
seealso:
  - module: rvl.fleet.rvl_doctor
'''

EXAMPLES = r'''
- name: Move the board onto the open GPU stack
  rvl.fleet.rvl_setup:
    board: turing-rk1
  become: true
  register: setup

- name: Boot what setup installed
  ansible.builtin.reboot:
  when: setup.changed and (setup.steps | intersect(['kernel', 'gpu-overlay']))
  become: true
'''

RETURN = r'''
steps:
  description: The steps of the plan (applied, or in check mode to be applied).
  returned: always
  type: list
  elements: str
  sample: [kernel, firmware]
plan:
  description: The plan as rvl printed it (board, steps with their actions and diffs, notes, blocked).
  returned: always
  type: dict
changed_paths:
  description: The paths the transaction changed.
  returned: when setup applied a plan
  type: list
  elements: str
transaction:
  description: The id of setup's transaction (for C(rvl setup --rollback --run ID)).
  returned: when setup applied a plan
  type: str
blocked:
  description: Steps setup could not carry out here, each with why and the fix.
  returned: always
  type: list
  elements: dict
notes:
  description: Setup's notes about the plan.
  returned: always
  type: list
  elements: str
remaining:
  description: Steps a fresh plan still lists after the apply (empty unless something changed meanwhile).
  returned: when setup applied a plan
  type: list
  elements: str
rc:
  description: rvl's exit status (0 applied or nothing to do, 11 a step is blocked, 12 a step failed and everything the run changed was put back).
  returned: always
  type: int
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rvl.fleet.plugins.module_utils.rvl import (
    SYSTEM_ARGS,
    fail_on_error,
    run_json,
    rvl_binary,
    system_argv,
)

# rvl's exit status for a blocked step (src/exit.rs).
BLOCKED = 11


def action_text(action):
    """One action of a step for diff mode: its unified diff, else what it does."""
    kind = action.get('kind')
    if action.get('diff'):
        return action['diff']
    if kind == 'run-tool':
        head = '# run %s %s' % (action.get('tool'), ' '.join(action.get('args', [])))
        return head.rstrip() + '\n' + (action.get('preview') or '')
    if kind == 'install-artifact':
        return '# install %s (%s, %s bytes, sha256 %s)\n' % (
            action.get('path'), action.get('description'), action.get('size'), action.get('sha256'))
    if kind == 'build-source':
        return '# build %s %s into %s\n' % (action.get('project'), action.get('version'), action.get('prefix'))
    if kind == 'install-prebuilt':
        return '# unpack %s into %s\n' % (action.get('url'), action.get('prefix'))
    if kind == 'symlink':
        return '# link %s -> %s (was %s)\n' % (action.get('path'), action.get('target'), action.get('was'))
    if kind == 'rename-file':
        return '# rename %s -> %s\n' % (action.get('from'), action.get('to'))
    if kind == 'install-overlay':
        return '# install overlay %s at %s\n' % (action.get('name'), action.get('path'))
    return '# %s\n' % kind


def diffs(plan):
    """Ansible's diff list: per step, its summary and every action's diff."""
    out = []
    for step in plan.get('steps', []):
        text = '# %s: %s\n' % (step.get('step'), step.get('summary'))
        text += ''.join(action_text(a) for a in step.get('actions', []))
        out.append(dict(prepared=text))
    return out


def blocked_message(blocked):
    return '; '.join(
        '%s blocked: %s (fix: %s)' % (b.get('step'), b.get('why'), b.get('fix')) for b in blocked
    )


def main():
    argument_spec = dict(SYSTEM_ARGS)
    argument_spec.update(
        only=dict(type='list', elements='str'),
        mesa_from=dict(type='str', choices=['source', 'prebuilt'], default='source'),
        mesa_candidates=dict(type='bool', default=False),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    p = module.params
    argv = [rvl_binary(module), 'setup', '--json']
    argv.append('--dry-run' if module.check_mode else '--yes')
    argv += system_argv(p)
    if p['only']:
        argv += ['--only', ','.join(p['only'])]
    argv += ['--mesa-from', p['mesa_from']]
    if p['mesa_candidates']:
        argv.append('--mesa-candidates')

    rc, doc, err = run_json(module, argv)
    # A failed step was rolled back: nothing changed. Other errors stop before any change.
    fail_on_error(module, rc, doc, argv, err, changed=False)

    plan = doc.get('plan') or {}
    steps = [s.get('step') for s in plan.get('steps', [])]
    applied = bool(doc.get('applied'))
    outcome = doc.get('outcome') or {}
    result = dict(
        changed=bool(steps) and (module.check_mode or applied),
        steps=steps,
        plan=plan,
        blocked=plan.get('blocked', []),
        notes=plan.get('notes', []),
        rc=rc,
    )
    if applied:
        result.update(
            changed_paths=outcome.get('changed', []),
            transaction=outcome.get('transaction'),
            remaining=doc.get('remaining', []),
        )
        for tool in outcome.get('deferred', []):
            module.warn(tool)
        if doc.get('remaining'):
            module.warn('a fresh plan still lists %s after this run' % ', '.join(doc['remaining']))
    if module._diff:
        result['diff'] = diffs(plan)
    if rc == BLOCKED or result['blocked']:
        module.fail_json(msg=blocked_message(result['blocked']) or 'a setup step is blocked', **result)
    if rc != 0:
        module.fail_json(msg='rvl setup exited with status %d' % rc, **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
