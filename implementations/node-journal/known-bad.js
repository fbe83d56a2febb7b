'use strict';
// Known-bad variants of the Node journal, for the harness to catch through the protocol
// (`main.js --variant NAME`). Each changes one decision the way a plausible bug would, and is otherwise the
// implementation itself: the harness must catch it by a property of the contract, never by a crash.
//
// A variant wraps `decide` (decide.js). It must be applied before journal.js is loaded, because journal.js
// takes `decide` from the module when it is loaded.

const decideModule = require('./decide');
const records = require('./records');
const { journalError } = require('./errors');

const { ACQUIRE, COMPLETE, FAIL } = decideModule;
const isLiveLease = (lifecycle) => lifecycle !== null && lifecycle.state === records.LEASED;

const VARIANTS = {
  // BUG: a lease is still active at the very microsecond it expires (`now <= expiresAt`), so an acquire at
  // expiry answers busy (or the holder's own lease) instead of taking over.
  'expiry-equality-active': (decide) => (request, registration, lifecycle) => {
    if (request.operation === ACQUIRE && isLiveLease(lifecycle) && request.now === lifecycle.expiresAt) {
      return decide({ ...request, now: request.now - 1 }, registration, lifecycle);
    }
    return decide(request, registration, lifecycle);
  },
  // BUG: a takeover of an expired lease keeps the fence epoch, so the old holder's fence still finishes.
  'takeover-keeps-fence': (decide) => (request, registration, lifecycle) => {
    if (request.operation === ACQUIRE && isLiveLease(lifecycle) && request.now >= lifecycle.expiresAt) {
      return decide(request, registration, { ...lifecycle, fenceEpoch: lifecycle.fenceEpoch - 1 });
    }
    return decide(request, registration, lifecycle);
  },
  // BUG: an exact terminal retry is checked against the lease's expiry, so a worker that retries its finish
  // after the lease ran out is told lease_rejected for a command it did finish.
  'terminal-retry-checks-expiry': (decide) => (request, registration, lifecycle) => {
    const finishing = request.operation === COMPLETE || request.operation === FAIL;
    if (finishing && lifecycle !== null && records.isTerminal(lifecycle) && request.now >= lifecycle.expiresAt) {
      throw journalError('lease_rejected');
    }
    return decide(request, registration, lifecycle);
  },
};

function apply(name) {
  const variant = VARIANTS[name];
  if (variant === undefined) {
    throw new Error(`unknown variant ${JSON.stringify(name)}; known: ${Object.keys(VARIANTS).join(', ')}`);
  }
  decideModule.decide = variant(decideModule.decide);
}

module.exports = { VARIANTS, apply };
