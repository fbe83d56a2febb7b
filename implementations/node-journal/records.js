'use strict';
// Stored records: exact builders and fail-closed parsers for the four document shapes (seeds 000 and 001,
// docs/journal-decisions.md "Structural validation"). Firestore is read with `useBigInt`, so a stored integer
// arrives as a BigInt and a stored double as a number: `revision: 1.0` is a double, not the integer 1, and
// fails closed exactly as in the Python reference. Nothing here repairs a stored value.

const { Timestamp } = require('firebase-admin/firestore');
const { TERMINAL_COMMITMENT_KIND } = require('./identity');
const { CALLER_SCOPE_KINDS, ENVIRONMENTS, MAX_ENDPOINT_SCHEMA_VERSION, MAX_FENCE_EPOCH } = require('./inputs');
const { journalError } = require('./errors');
const time = require('./time');

const MAX_REVISION = 9999999999;
const AGGREGATE_TYPE = 'commerce_command';
const LEASED = 'leased';
const SUCCEEDED = 'succeeded';
const FAILED_FINAL = 'failed_final';
const TERMINAL_EVENTS = Object.freeze({ succeeded: 'command_succeeded', failed_final: 'command_failed_final' });

const unrecognized = () => journalError('unrecognized_record');
function check(condition) {
  if (!condition) throw unrecognized();
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
const COMMAND_TYPE = /^[a-z][a-z0-9_]{0,63}$/;
const intIn = (low, high) => (v) => typeof v === 'bigint' && v >= BigInt(low) && v <= BigInt(high);
const exactInt = (n) => intIn(n, n);
const exactString = (s) => (v) => v === s;
const oneOf = (options) => (v) => typeof v === 'string' && options.includes(v);
const isSha256 = (v) => typeof v === 'string' && SHA256_HEX.test(v);
const isSlug = (v) => typeof v === 'string' && COMMAND_TYPE.test(v);
const isNull = (v) => v === null;
// This contract stores microseconds (SPEC.md "Time rules"); a finer stored time is not one of its records.
const isTimestamp = (v) => v instanceof Timestamp && v.nanoseconds % 1000 === 0;

const ROOT_SCHEMA = {
  journalSchemaVersion: exactInt(1),
  commandIdentityVersion: exactInt(1),
  endpointSchemaVersion: intIn(1, MAX_ENDPOINT_SCHEMA_VERSION),
  environment: oneOf(ENVIRONMENTS),
  callerScopeKind: oneOf(CALLER_SCOPE_KINDS),
  commandType: isSlug,
  payloadFingerprint: isSha256,
  state: exactString('registered'),
  revision: exactInt(1),
  createdAt: isTimestamp,
  updatedAt: isTimestamp,
};

const REGISTRATION_AUDIT_SCHEMA = {
  auditSchemaVersion: exactInt(1),
  aggregateType: exactString(AGGREGATE_TYPE),
  commandKeyHash: isSha256,
  commandRevision: exactInt(1),
  eventType: exactString('command_registered'),
  fromState: isNull,
  toState: exactString('registered'),
  environment: oneOf(ENVIRONMENTS),
  callerScopeKind: oneOf(CALLER_SCOPE_KINDS),
  commandType: isSlug,
  occurredAt: isTimestamp,
};

const LIFECYCLE_SCHEMA = {
  lifecycleSchemaVersion: exactInt(1),
  commandKeyHash: isSha256,
  state: oneOf([LEASED, SUCCEEDED, FAILED_FINAL]),
  commandRevision: intIn(2, MAX_REVISION),
  fenceEpoch: intIn(1, MAX_FENCE_EPOCH),
  leaseOwnerFingerprint: isSha256,
  leaseAcquiredAt: isTimestamp,
  leaseExpiresAt: isTimestamp,
  createdAt: isTimestamp,
  updatedAt: isTimestamp,
  terminalCommitmentKind: (v) => v === null || v === TERMINAL_COMMITMENT_KIND,
  terminalCommitmentHash: (v) => v === null || isSha256(v),
};

const TRANSITION_AUDIT_SCHEMA = {
  auditSchemaVersion: exactInt(2),
  aggregateType: exactString(AGGREGATE_TYPE),
  commandKeyHash: isSha256,
  commandRevision: intIn(2, MAX_REVISION),
  eventType: oneOf(['command_lease_acquired', 'command_lease_taken_over', ...Object.values(TERMINAL_EVENTS)]),
  fromState: oneOf(['registered', LEASED]),
  toState: oneOf([LEASED, SUCCEEDED, FAILED_FINAL]),
  environment: oneOf(ENVIRONMENTS),
  callerScopeKind: oneOf(CALLER_SCOPE_KINDS),
  commandType: isSlug,
  fenceEpoch: intIn(1, MAX_FENCE_EPOCH),
  leaseExpiresAt: isTimestamp,
  occurredAt: isTimestamp,
};

// Exactly the schema's fields, each valid; BigInts become numbers (all in safe range) and Timestamps become
// microsecond instants (time.js), so decisions compare plain values.
function validate(document, schema) {
  check(document !== null && typeof document === 'object' && Object.getPrototypeOf(document) === Object.prototype);
  const names = Object.keys(document);
  check(names.length === Object.keys(schema).length && names.every((name) => Object.hasOwn(schema, name)));
  const parsed = {};
  for (const [name, isValid] of Object.entries(schema)) {
    const value = document[name];
    check(isValid(value));
    if (typeof value === 'bigint') parsed[name] = Number(value);
    else if (value instanceof Timestamp) parsed[name] = time.fromTimestamp(value);
    else parsed[name] = value;
  }
  return parsed;
}

function parseRegistration(rootDocument, auditDocument, command) {
  const root = validate(rootDocument, ROOT_SCHEMA);
  const audit = validate(auditDocument, REGISTRATION_AUDIT_SCHEMA);
  check(root.createdAt === root.updatedAt);
  // Environment and caller kind are inputs of the key hash: a stored value that disagrees is corruption.
  check(root.environment === command.environment && root.callerScopeKind === command.callerScopeKind);
  check(audit.commandKeyHash === command.commandKeyHash);
  check(['environment', 'callerScopeKind', 'commandType'].every((name) => audit[name] === root[name]));
  check(audit.occurredAt === root.createdAt);
  return Object.freeze({
    commandType: root.commandType,
    endpointSchemaVersion: root.endpointSchemaVersion,
    payloadFingerprint: root.payloadFingerprint,
    createdAt: root.createdAt,
  });
}

function parseLifecycle(document, command, registration) {
  const doc = validate(document, LIFECYCLE_SCHEMA);
  const { state, commandRevision: revision, fenceEpoch: fence } = doc;
  const { leaseAcquiredAt: acquired, leaseExpiresAt: expires, createdAt: created, updatedAt: updated } = doc;
  check(doc.commandKeyHash === command.commandKeyHash);
  check(expires === acquired + time.LEASE_DURATION);
  check(registration.createdAt <= created && created <= acquired);
  const kind = doc.terminalCommitmentKind;
  const commitment = doc.terminalCommitmentHash;
  if (state === LEASED) {
    check(revision === fence + 1 && updated === acquired && kind === null && commitment === null);
    check(revision !== 2 || created === acquired);
  } else {
    check(revision === fence + 2 && acquired <= updated && updated < expires);
    if (state === SUCCEEDED) check(kind === TERMINAL_COMMITMENT_KIND && commitment !== null);
    else check(kind === null && commitment === null);
  }
  return Object.freeze({
    state,
    revision,
    fenceEpoch: fence,
    ownerFingerprint: doc.leaseOwnerFingerprint,
    acquiredAt: acquired,
    expiresAt: expires,
    createdAt: created,
    updatedAt: updated,
    commitmentHash: commitment,
  });
}

const isTerminal = (lifecycle) => lifecycle.state === SUCCEEDED || lifecycle.state === FAILED_FINAL;

function checkCurrentAudit(document, command, registration, lifecycle) {
  const audit = validate(document, TRANSITION_AUDIT_SCHEMA);
  let expected;
  if (isTerminal(lifecycle)) expected = [TERMINAL_EVENTS[lifecycle.state], LEASED, lifecycle.state];
  else if (lifecycle.revision === 2) expected = ['command_lease_acquired', 'registered', LEASED];
  else expected = ['command_lease_taken_over', LEASED, LEASED];
  check(audit.eventType === expected[0] && audit.fromState === expected[1] && audit.toState === expected[2]);
  check(audit.commandKeyHash === command.commandKeyHash && audit.commandRevision === lifecycle.revision);
  check(audit.environment === command.environment && audit.callerScopeKind === command.callerScopeKind);
  check(audit.commandType === registration.commandType); // the caller's type may conflict: judged later
  check(audit.fenceEpoch === lifecycle.fenceEpoch && audit.leaseExpiresAt === lifecycle.expiresAt);
  check(audit.occurredAt === lifecycle.updatedAt);
}

// Builders: field order as the seeds list them. Integers are plain numbers (the SDK writes a safe integer as an
// integerValue), times are Timestamps rebuilt from microsecond instants.
function rootDocument(command, now) {
  return {
    journalSchemaVersion: 1,
    commandIdentityVersion: 1,
    endpointSchemaVersion: command.endpointSchemaVersion,
    environment: command.environment,
    callerScopeKind: command.callerScopeKind,
    commandType: command.commandType,
    payloadFingerprint: command.payloadFingerprint,
    state: 'registered',
    revision: 1,
    createdAt: time.toTimestamp(now),
    updatedAt: time.toTimestamp(now),
  };
}

function registrationAuditDocument(command, now) {
  return {
    auditSchemaVersion: 1,
    aggregateType: AGGREGATE_TYPE,
    commandKeyHash: command.commandKeyHash,
    commandRevision: 1,
    eventType: 'command_registered',
    fromState: null,
    toState: 'registered',
    environment: command.environment,
    callerScopeKind: command.callerScopeKind,
    commandType: command.commandType,
    occurredAt: time.toTimestamp(now),
  };
}

function lifecycleDocument(command, lifecycle) {
  const terminal = lifecycle.state === SUCCEEDED;
  return {
    lifecycleSchemaVersion: 1,
    commandKeyHash: command.commandKeyHash,
    state: lifecycle.state,
    commandRevision: lifecycle.revision,
    fenceEpoch: lifecycle.fenceEpoch,
    leaseOwnerFingerprint: lifecycle.ownerFingerprint,
    leaseAcquiredAt: time.toTimestamp(lifecycle.acquiredAt),
    leaseExpiresAt: time.toTimestamp(lifecycle.expiresAt),
    createdAt: time.toTimestamp(lifecycle.createdAt),
    updatedAt: time.toTimestamp(lifecycle.updatedAt),
    terminalCommitmentKind: terminal ? TERMINAL_COMMITMENT_KIND : null,
    terminalCommitmentHash: terminal ? lifecycle.commitmentHash : null,
  };
}

function transitionAuditDocument(command, lifecycle, eventType, fromState) {
  return {
    auditSchemaVersion: 2,
    aggregateType: AGGREGATE_TYPE,
    commandKeyHash: command.commandKeyHash,
    commandRevision: lifecycle.revision,
    eventType,
    fromState,
    toState: lifecycle.state,
    environment: command.environment,
    callerScopeKind: command.callerScopeKind,
    commandType: command.commandType,
    fenceEpoch: lifecycle.fenceEpoch,
    leaseExpiresAt: time.toTimestamp(lifecycle.expiresAt),
    occurredAt: time.toTimestamp(lifecycle.updatedAt),
  };
}

module.exports = {
  MAX_REVISION,
  LEASED,
  SUCCEEDED,
  FAILED_FINAL,
  TERMINAL_EVENTS,
  unrecognized,
  isTerminal,
  parseRegistration,
  parseLifecycle,
  checkCurrentAudit,
  rootDocument,
  registrationAuditDocument,
  lifecycleDocument,
  transitionAuditDocument,
};
