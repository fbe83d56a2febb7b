'use strict';
// The command journal on firebase-admin (seeds 000 and 001; SPEC.md; docs/journal-decisions.md): the seeds' four
// exported functions. Each validates its input, reads the trusted clock once, runs one decision in a
// transaction (runner.js) and returns a frozen, fixed-shape output or throws CommerceCommandJournalError.
//
// `db` is a firebase-admin Firestore whose settings include `useBigInt: true` (see openFirestore): without it a
// stored double 1.0 reads back as the integer 1 and a malformed record would pass.

const { Timestamp } = require('firebase-admin/firestore');
const identity = require('./identity');
const inputs = require('./inputs');
const records = require('./records');
const time = require('./time');
const { ACQUIRE, COMPLETE, FAIL, REGISTER, decide } = require('./decide');
const { CommerceCommandJournalError, ERROR_CODES, journalError } = require('./errors');
const { NEEDS_WRITE, runTransaction } = require('./runner');

// The default trusted clock: Firestore's Timestamp.now() (millisecond precision in Node).
const systemClock = () => Timestamp.now();

// One reading, before any transaction. Anything but a Timestamp at microsecond precision is no trusted time.
function readClock(clock) {
  let now;
  try {
    now = clock();
  } catch {
    now = undefined;
  }
  if (!(now instanceof Timestamp) || now.nanoseconds % 1000 !== 0) throw journalError('journal_unavailable');
  return time.fromTimestamp(now);
}

async function read(transaction, db, paths) {
  const snapshots = await transaction.getAll(...paths.map((path) => db.doc(path)));
  return snapshots.map((snapshot) => (snapshot.exists ? snapshot.data() : null));
}

function transactionBody(db, request, readOnly) {
  const key = request.command.commandKeyHash;
  return async (transaction) => {
    const [root, registrationAudit, storedLifecycle] = await read(transaction, db, [
      identity.rootPath(key),
      identity.auditPath(key, 1),
      identity.lifecyclePath(key),
    ]);
    let registration = null;
    let lifecycle = null;
    if (root === null && registrationAudit === null) {
      if (storedLifecycle !== null) throw records.unrecognized(); // orphan lifecycle
    } else {
      registration = records.parseRegistration(root, registrationAudit, request.command);
      let nextAudit;
      if (storedLifecycle === null) {
        [nextAudit] = await read(transaction, db, [identity.auditPath(key, 2)]);
      } else {
        lifecycle = records.parseLifecycle(storedLifecycle, request.command, registration);
        let partner;
        [partner, nextAudit] = await read(transaction, db, [
          identity.auditPath(key, lifecycle.revision),
          identity.auditPath(key, lifecycle.revision + 1),
        ]);
        records.checkCurrentAudit(partner, request.command, registration, lifecycle);
      }
      if (nextAudit !== null) throw records.unrecognized(); // a preseeded next audit
    }
    const { output, writes } = decide(request, registration, lifecycle);
    if (readOnly && writes.length > 0) return NEEDS_WRITE;
    for (const { path, document, create } of writes) {
      if (create) transaction.create(db.doc(path), document);
      else transaction.set(db.doc(path), document);
    }
    return output;
  };
}

function run(db, request, attemptLog) {
  return runTransaction(db, transactionBody(db, request, false), transactionBody(db, request, true), attemptLog);
}

// Input errors are answers, as a rejected promise: the functions are async throughout.
async function prepared(args, operation) {
  const command = inputs.prepareCommand(args);
  const request = { operation, command, ownerFingerprint: null, expectedFenceEpoch: null, commitmentHash: null };
  if (operation !== REGISTER) request.ownerFingerprint = inputs.prepareLeaseOwner(command, args);
  if (operation === COMPLETE || operation === FAIL) request.expectedFenceEpoch = inputs.prepareFence(args.expectedFenceEpoch);
  if (operation === COMPLETE) request.commitmentHash = inputs.prepareCommitment(command, args.terminalReferenceFingerprint);
  request.now = readClock(args.clock ?? systemClock);
  return Object.freeze(request);
}

async function registerCommerceCommand(args) {
  return run(args.db, await prepared(args, REGISTER), args.attemptLog);
}
async function acquireCommerceCommandLease(args) {
  return run(args.db, await prepared(args, ACQUIRE), args.attemptLog);
}
async function completeCommerceCommand(args) {
  return run(args.db, await prepared(args, COMPLETE), args.attemptLog);
}
async function failCommerceCommand(args) {
  return run(args.db, await prepared(args, FAIL), args.attemptLog);
}

// A firebase-admin Firestore for `projectId`; FIRESTORE_EMULATOR_HOST (read by the SDK) points it at the
// emulator.
function openFirestore(projectId) {
  const { initializeApp } = require('firebase-admin/app');
  const { getFirestore } = require('firebase-admin/firestore');
  const app = initializeApp({ projectId }, `node-journal-${projectId}`);
  const db = getFirestore(app);
  db.settings({ useBigInt: true });
  return db;
}

module.exports = {
  ERROR_CODES,
  CommerceCommandJournalError,
  registerCommerceCommand,
  acquireCommerceCommandLease,
  completeCommerceCommand,
  failCommerceCommand,
  openFirestore,
  systemClock,
};
