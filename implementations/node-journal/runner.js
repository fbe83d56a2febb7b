'use strict';
// The transaction runner (docs/journal-decisions.md, "Transaction runner"): at most 10 read-write attempts,
// retried in wall-clock rounds, watched by lock-free looks.
//
// Why not the SDK's own retries (runTransaction's default of 5 attempts, or maxAttempts: 10): the Node SDK
// retries not only ABORTED but also UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN, CANCELLED,
// UNAUTHENTICATED and RESOURCE_EXHAUSTED, from the commit too, with its own exponential backoff. The contract
// makes every failure other than contention `journal_unavailable` at once (indefinite from a commit) and retries
// contention in rounds. So each attempt is one SDK transaction with `maxAttempts: 1`, and this loop owns the
// count (10), the pauses and the classification.

const { CommerceCommandJournalError, journalError } = require('./errors');

const MAX_ATTEMPTS = 10;
const RETRY_ROUND_SECONDS = 3.0;
const ROUND_JITTER_SECONDS = 0.5;
const LOOK_INTERVAL_SECONDS = 0.5;
const ABORTED = 10; // gRPC status code
const NEEDS_WRITE = Symbol('needs write');
// The answer a read-write attempt can reach from an inconsistent pair of reads: under contention the emulator
// can serve one attempt's two batches from two states (a winner's commit between them: the next audit beside
// the older lifecycle; docs/journal-decisions.md, "Two-batch reads"). Handled as an abort until a look, one
// consistent snapshot, confirms it.
const UNCONFIRMED = 'unrecognized_record';

const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

function pauseBeforeRetry(now, jitter) {
  return Math.ceil(now / RETRY_ROUND_SECONDS) * RETRY_ROUND_SECONDS - now + jitter;
}

// 'abort' (definite: nothing applied), 'failure' (Firestore or transport: journal_unavailable at once), or the
// error itself rethrown: neither Firestore nor contention is a bug, and it must be loud.
function classify(error) {
  if (error instanceof CommerceCommandJournalError) throw error;
  if (error !== null && typeof error === 'object' && typeof error.code === 'number') {
    return error.code === ABORTED ? 'abort' : 'failure';
  }
  throw error;
}

async function look(db, body, log) {
  log.looks += 1;
  try {
    return await db.runTransaction(body, { readOnly: true });
  } catch (error) {
    if (classify(error) === 'failure') throw journalError('journal_unavailable');
    return NEEDS_WRITE; // contention: no information, the read-write attempt decides
  }
}

async function pauseWatching(db, lookBody, log, pause) {
  let remaining = pause;
  for (;;) {
    const answer = await look(db, lookBody, log);
    if (answer !== NEEDS_WRITE || remaining <= 0) return answer;
    const interval = Math.min(LOOK_INTERVAL_SECONDS, remaining);
    await sleep(interval);
    remaining -= interval;
  }
}

// `body(transaction)` decides and writes; `lookBody` is the same decision in a read-only transaction, answering
// NEEDS_WRITE when only a write could decide.
async function runTransaction(db, body, lookBody, log = { attempts: 0, aborts: 0, looks: 0 }) {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
    log.attempts += 1;
    let outcome;
    try {
      return await db.runTransaction(body, { maxAttempts: 1 });
    } catch (error) {
      const unconfirmed = error instanceof CommerceCommandJournalError && error.code === UNCONFIRMED;
      outcome = unconfirmed ? 'unconfirmed' : classify(error); // the original is never chained into our error
    }
    if (outcome === 'failure') break;
    log.aborts += 1;
    if (attempt < MAX_ATTEMPTS) {
      const pause = pauseBeforeRetry(Date.now() / 1000, Math.random() * ROUND_JITTER_SECONDS);
      const answer = await pauseWatching(db, lookBody, log, pause);
      if (answer !== NEEDS_WRITE) return answer;
    } else if (outcome === 'unconfirmed') {
      const answer = await look(db, lookBody, log); // the last attempt's finding, still confirmed first
      if (answer !== NEEDS_WRITE) return answer;
    }
  }
  throw journalError('journal_unavailable');
}

module.exports = { MAX_ATTEMPTS, NEEDS_WRITE, pauseBeforeRetry, runTransaction };
