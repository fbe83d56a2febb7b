'use strict';
// The journal's decisions (docs/journal-decisions.md, "Precedence" and "Operation rules"): pure functions of the
// validated records and of values prepared before the transaction. Called inside the transaction callback, so
// no clock, randomness, logging or I/O here: `now` is the one trusted reading, reused by every attempt.

const identity = require('./identity');
const { journalError } = require('./errors');
const { MAX_FENCE_EPOCH } = require('./inputs');
const records = require('./records');
const time = require('./time');

const REGISTER = 'register';
const ACQUIRE = 'acquire';
const COMPLETE = 'complete';
const FAIL = 'fail';

const registrationResult = (outcome) => Object.freeze({ journalSchemaVersion: 1, outcome, state: 'registered' });
const observation = (outcome, state) =>
  Object.freeze({ journalSchemaVersion: 1, lifecycleSchemaVersion: 1, outcome, state });
const LEASE_BUSY = observation('lease_busy', records.LEASED);
const TERMINAL_OBSERVATIONS = Object.freeze({
  succeeded: observation('terminal_succeeded', records.SUCCEEDED),
  failed_final: observation('terminal_failed_final', records.FAILED_FINAL),
});
const leaseOutput = (lifecycle) =>
  Object.freeze({
    journalSchemaVersion: 1,
    lifecycleSchemaVersion: 1,
    outcome: 'lease_acquired',
    state: records.LEASED,
    fenceEpoch: lifecycle.fenceEpoch,
    leaseExpiresAt: time.leaseTimestamp(lifecycle.expiresAt),
  });

// A write: `create` fails if the document appeared meanwhile; otherwise `set` replaces the lifecycle.
const write = (path, document, create) => Object.freeze({ path, document, create });
const decision = (output, writes = []) => Object.freeze({ output, writes: Object.freeze(writes) });

function decide(request, registration, lifecycle) {
  const { command } = request;
  if (registration === null) {
    if (request.operation !== REGISTER) throw journalError('command_not_registered');
    const key = command.commandKeyHash;
    return decision(registrationResult('registered_new'), [
      write(identity.rootPath(key), records.rootDocument(command, request.now), true),
      write(identity.auditPath(key, 1), records.registrationAuditDocument(command, request.now), true),
    ]);
  }
  if (
    registration.commandType !== command.commandType ||
    registration.endpointSchemaVersion !== command.endpointSchemaVersion ||
    registration.payloadFingerprint !== command.payloadFingerprint
  ) {
    throw journalError('command_conflict');
  }
  if (request.operation === REGISTER) return decision(registrationResult('registered_existing'));
  if (request.operation === ACQUIRE) return acquire(request, registration, lifecycle);
  return finish(request, registration, lifecycle);
}

function mutation(command, after, eventType, fromState, output) {
  const key = command.commandKeyHash;
  return decision(output, [
    write(identity.lifecyclePath(key), records.lifecycleDocument(command, after), fromState === 'registered'),
    write(identity.auditPath(key, after.revision), records.transitionAuditDocument(command, after, eventType, fromState), true),
  ]);
}

function acquire(request, registration, lifecycle) {
  const { now, ownerFingerprint: owner } = request;
  if (lifecycle === null) {
    if (now < registration.createdAt) throw journalError('journal_unavailable');
    const first = {
      state: records.LEASED,
      revision: 2,
      fenceEpoch: 1,
      ownerFingerprint: owner,
      acquiredAt: now,
      expiresAt: now + time.LEASE_DURATION,
      createdAt: now,
      updatedAt: now,
      commitmentHash: null,
    };
    return mutation(request.command, first, 'command_lease_acquired', 'registered', leaseOutput(first));
  }
  if (records.isTerminal(lifecycle)) return decision(TERMINAL_OBSERVATIONS[lifecycle.state]);
  if (now < lifecycle.expiresAt) {
    return decision(lifecycle.ownerFingerprint === owner ? leaseOutput(lifecycle) : LEASE_BUSY);
  }
  if (lifecycle.revision >= records.MAX_REVISION || lifecycle.fenceEpoch >= MAX_FENCE_EPOCH) {
    throw records.unrecognized(); // the next revision or fence would not fit: never wrap
  }
  const taken = {
    ...lifecycle,
    revision: lifecycle.revision + 1,
    fenceEpoch: lifecycle.fenceEpoch + 1,
    ownerFingerprint: owner,
    acquiredAt: now,
    expiresAt: now + time.LEASE_DURATION,
    updatedAt: now,
  };
  return mutation(request.command, taken, 'command_lease_taken_over', records.LEASED, leaseOutput(taken));
}

function finish(request, registration, lifecycle) {
  const target = request.operation === COMPLETE ? records.SUCCEEDED : records.FAILED_FINAL;
  const exactTerminalRetry =
    lifecycle !== null &&
    lifecycle.state === target &&
    lifecycle.ownerFingerprint === request.ownerFingerprint &&
    lifecycle.fenceEpoch === request.expectedFenceEpoch &&
    lifecycle.commitmentHash === request.commitmentHash;
  if (exactTerminalRetry) return decision(TERMINAL_OBSERVATIONS[target]);
  const builtOn = lifecycle !== null ? lifecycle.updatedAt : registration.createdAt;
  if (request.now < builtOn) throw journalError('journal_unavailable'); // an earlier reading may observe only
  if (lifecycle === null) throw journalError('lease_rejected');
  if (records.isTerminal(lifecycle)) throw journalError('terminal_conflict');
  if (
    lifecycle.ownerFingerprint !== request.ownerFingerprint ||
    lifecycle.fenceEpoch !== request.expectedFenceEpoch ||
    request.now >= lifecycle.expiresAt
  ) {
    throw journalError('lease_rejected');
  }
  if (lifecycle.revision >= records.MAX_REVISION) throw records.unrecognized();
  const finished = {
    ...lifecycle,
    state: target,
    revision: lifecycle.revision + 1,
    updatedAt: request.now,
    commitmentHash: request.commitmentHash,
  };
  return mutation(request.command, finished, records.TERMINAL_EVENTS[target], records.LEASED, TERMINAL_OBSERVATIONS[target]);
}

module.exports = { REGISTER, ACQUIRE, COMPLETE, FAIL, decide };
