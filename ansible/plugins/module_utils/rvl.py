# -*- coding: utf-8 -*-
# Copyright (c) rvl contributors
# MIT or Apache-2.0, at your option (LICENSE-MIT, LICENSE-APACHE in the rvl repository)

"""Running rvl from a module: the options every verb shares, the command line, and its one
JSON document read back (rvl's --json prints exactly one, failures included; docs/json.md)."""

from __future__ import annotations

import json

# rvl's JSON documents this collection reads (the envelope's schema_version).
SCHEMA_VERSION = 1

SYSTEM_ARGS = dict(
    rvl=dict(type='str', default='rvl'),
    root=dict(type='path', default='/'),
    board=dict(type='str'),
    profiles=dict(type='path'),
    manifest=dict(type='path'),
)


def rvl_binary(module):
    """The rvl executable: a path as given, else looked up on the target's PATH."""
    rvl = module.params['rvl']
    if '/' in rvl:
        return rvl
    return module.get_bin_path(rvl, required=True)


def system_argv(params):
    """--root, --board, --profiles and --manifest as the module's options give them."""
    argv = ['--root', params['root']]
    for flag, key in (('--board', 'board'), ('--profiles', 'profiles'), ('--manifest', 'manifest')):
        if params.get(key):
            argv += [flag, params[key]]
    return argv


def run_json(module, argv):
    """Run rvl and return (rc, document, stderr). Output that is not one rvl JSON document of
    the schema this collection reads fails the task with what rvl said on stderr."""
    rc, out, err = module.run_command(argv, check_rc=False, environ_update={'LC_ALL': 'C.UTF-8'})
    try:
        doc = json.loads(out)
    except ValueError:
        module.fail_json(
            msg='rvl printed no JSON document (exit status %d): %s' % (rc, (err or out).strip()[-2000:]),
            rc=rc, cmd=argv, stderr=err,
        )
    if not isinstance(doc, dict) or doc.get('schema_version') != SCHEMA_VERSION:
        module.fail_json(
            msg='rvl printed a document of schema_version %r; this collection reads %d (update the collection with rvl)'
            % (doc.get('schema_version') if isinstance(doc, dict) else None, SCHEMA_VERSION),
            rc=rc, cmd=argv, stderr=err,
        )
    return rc, doc, err


def fail_on_error(module, rc, doc, argv, err, **extra):
    """A document with `error` fails the task with rvl's message, its kind and exit status."""
    error = doc.get('error')
    if error is None:
        return
    module.fail_json(
        msg=error.get('message', 'rvl failed'),
        rc=rc,
        kind=error.get('kind'),
        causes=error.get('causes', []),
        cmd=argv,
        stderr=err,
        **extra
    )
