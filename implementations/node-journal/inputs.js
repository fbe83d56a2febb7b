'use strict';
// Input validation and preparation, all before any Firestore call (SPEC.md, "Inputs"). Only plain data passes:
// no proxies, accessors, symbols or prototypes other than Object's and Array's, so what is validated is what is
// hashed. The payload is copied while it is checked; raw ids and caller values are dropped here.

const { types } = require('node:util');
const identity = require('./identity');
const { journalError } = require('./errors');

const ENVIRONMENTS = Object.freeze(['local', 'test', 'staging', 'production']);
const CALLER_SCOPE_KINDS = Object.freeze(['firebase_uid', 'anonymous_principal', 'internal_system']);
const MAX_ENDPOINT_SCHEMA_VERSION = 1000000;
const MAX_FENCE_EPOCH = 9999999999;
const MAX_PAYLOAD_DEPTH = 16;
const MAX_PAYLOAD_BYTES = 32768;
const MAX_CALLER_VALUE_LENGTH = 128;

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const COMMAND_TYPE = /^[a-z][a-z0-9_]{0,63}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/; // Unicode category Cc

function require_(condition) {
  if (!condition) throw journalError('invalid_command_input');
}

const matches = (pattern, value) => typeof value === 'string' && pattern.test(value);
const isInt = (value, low, high) => Number.isSafeInteger(value) && !Object.is(value, -0) && value >= low && value <= high;

// Own enumerable string-keyed data properties only, on a plain object or array that is not a proxy.
function plainEntries(value, prototype) {
  require_(!types.isProxy(value) && Object.getPrototypeOf(value) === prototype);
  require_(Object.getOwnPropertySymbols(value).length === 0);
  const descriptors = Object.getOwnPropertyDescriptors(value);
  const names = Object.keys(descriptors);
  const entries = [];
  for (const name of names) {
    const descriptor = descriptors[name];
    if (Array.isArray(value) && name === 'length') continue;
    require_('value' in descriptor && descriptor.enumerable);
    entries.push([name, descriptor.value]);
  }
  return entries;
}

function isPlainObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !types.isProxy(value) &&
    (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null);
}

// Mirrors the reference's budget: every JSON value costs at least one byte of canonical JSON, so a payload
// within the size limit has at most that many values; shared references cannot blow up before the size check.
function plainJson(value, depth, budget) {
  budget.left -= 1;
  require_(budget.left >= 0);
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    require_(value.isWellFormed()); // a lone surrogate has no UTF-8 form
    return value;
  }
  if (typeof value === 'number') {
    require_(Number.isSafeInteger(value)); // no float, NaN or Infinity; -0 is the integer 0 in canonical JSON
    return value === 0 ? 0 : value;
  }
  require_(typeof value === 'object' && depth < MAX_PAYLOAD_DEPTH); // deeper, or a cycle, ends here
  if (Array.isArray(value)) {
    const entries = plainEntries(value, Array.prototype);
    require_(entries.length === value.length && entries.every(([name], i) => name === String(i)));
    return entries.map(([, item]) => plainJson(item, depth + 1, budget));
  }
  require_(isPlainObject(value));
  const copy = Object.create(null);
  for (const [name, item] of plainEntries(value, Object.getPrototypeOf(value))) {
    require_(name.isWellFormed());
    copy[name] = plainJson(item, depth + 1, budget);
  }
  return copy;
}

function canonicalPayload(payload) {
  require_(isPlainObject(payload));
  const text = identity.canonicalJson(plainJson(payload, 0, { left: MAX_PAYLOAD_BYTES }));
  require_(Buffer.byteLength(text, 'utf8') <= MAX_PAYLOAD_BYTES);
  return text;
}

function callerScopeOf(callerScope) {
  require_(isPlainObject(callerScope));
  const entries = plainEntries(callerScope, Object.getPrototypeOf(callerScope));
  require_(entries.length === 2 && Object.hasOwn(callerScope, 'kind') && Object.hasOwn(callerScope, 'value'));
  const { kind, value } = Object.fromEntries(entries);
  require_(typeof kind === 'string' && CALLER_SCOPE_KINDS.includes(kind));
  require_(typeof value === 'string' && value.isWellFormed());
  const length = [...value].length; // characters are code points, as in the contract, not UTF-16 units
  require_(length >= 1 && length <= MAX_CALLER_VALUE_LENGTH && !CONTROL.test(value));
  return [kind, value];
}

function prepareCommand({ environment, callerScope, commandId, commandType, endpointSchemaVersion, payload }) {
  require_(typeof environment === 'string' && ENVIRONMENTS.includes(environment));
  const [kind, value] = callerScopeOf(callerScope);
  require_(matches(UUID4, commandId));
  require_(matches(COMMAND_TYPE, commandType));
  require_(isInt(endpointSchemaVersion, 1, MAX_ENDPOINT_SCHEMA_VERSION));
  const payloadText = canonicalPayload(payload);
  const keyHash = identity.commandKeyHash(environment, kind, value, commandId);
  return Object.freeze({
    environment,
    callerScopeKind: kind,
    commandType,
    endpointSchemaVersion,
    commandKeyHash: keyHash,
    payloadFingerprint: identity.payloadFingerprint(keyHash, payloadText),
  });
}

function prepareLeaseOwner(command, { commandId, leaseId }) {
  require_(matches(UUID4, leaseId) && leaseId !== commandId);
  return identity.leaseOwnerFingerprint(command.commandKeyHash, leaseId);
}

function prepareFence(expectedFenceEpoch) {
  require_(isInt(expectedFenceEpoch, 1, MAX_FENCE_EPOCH));
  return expectedFenceEpoch;
}

function prepareCommitment(command, terminalReferenceFingerprint) {
  require_(matches(SHA256_HEX, terminalReferenceFingerprint));
  return identity.terminalCommitmentHash(command.commandKeyHash, terminalReferenceFingerprint);
}

module.exports = {
  ENVIRONMENTS,
  CALLER_SCOPE_KINDS,
  MAX_ENDPOINT_SCHEMA_VERSION,
  MAX_FENCE_EPOCH,
  prepareCommand,
  prepareLeaseOwner,
  prepareFence,
  prepareCommitment,
};
