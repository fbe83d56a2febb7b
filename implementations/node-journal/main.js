#!/usr/bin/env node
'use strict';
// Protocol adapter (docs/implementation-protocol.md, version 1): JSON lines on stdin, answers on stdout, in
// any order; many requests in flight at once. Diagnostics go to stderr only. Exits 0 at end of input once every
// answer is written; exits 2 when started without FIRESTORE_EMULATOR_HOST or FENCECHECK_PROJECT_ID.

const readline = require('node:readline');
const variant = variantName(process.argv.slice(2));
if (variant !== null) require('./known-bad').apply(variant); // before journal.js takes `decide`
const journal = require('./journal');
const time = require('./time');

const PROTOCOL = 'fencecheck-implementation';
const VERSION = 1;
const COMMON = ['environment', 'callerScope', 'commandId', 'commandType', 'endpointSchemaVersion', 'payload'];
const OPERATIONS = {
  registerCommerceCommand: [journal.registerCommerceCommand, COMMON],
  acquireCommerceCommandLease: [journal.acquireCommerceCommandLease, [...COMMON, 'leaseId']],
  completeCommerceCommand: [
    journal.completeCommerceCommand,
    [...COMMON, 'leaseId', 'expectedFenceEpoch', 'terminalReferenceFingerprint'],
  ],
  failCommerceCommand: [journal.failCommerceCommand, [...COMMON, 'leaseId', 'expectedFenceEpoch']],
};

class ProtocolError extends Error {}

// `main.js` serves the implementation; `main.js --variant NAME` one of its known-bad variants (known-bad.js).
function variantName(argv) {
  if (argv.length === 0) return null;
  if (argv.length === 2 && argv[0] === '--variant') return argv[1];
  process.stderr.write('usage: main.js [--variant NAME]\n');
  process.exit(2);
}

// JavaScript parses 1.0 and 1 to the same number, yet the contract refuses a float anywhere a journal operation
// takes a number (payload values, endpointSchemaVersion, expectedFenceEpoch). So the raw line is scanned: the
// deepest nesting at which a number token with a fraction or exponent appears (0 when none).
function floatDepth(line) {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (c === '"') {
      for (i += 1; i < line.length && line[i] !== '"'; i += 1) if (line[i] === '\\') i += 1;
    } else if (c === '{' || c === '[') depth += 1;
    else if (c === '}' || c === ']') depth -= 1;
    else if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i;
      while (j < line.length && /[0-9eE+.-]/.test(line[j])) j += 1;
      if (/[.eE]/.test(line.slice(i, j))) deepest = Math.max(deepest, depth);
      i = j - 1;
    }
  }
  return deepest;
}

function validId(id) {
  return (Number.isSafeInteger(id) && id >= 0) || (typeof id === 'string' && id.length > 0 && id.length <= 128);
}

function main() {
  const emulatorHost = process.env.FIRESTORE_EMULATOR_HOST;
  const projectId = process.env.FENCECHECK_PROJECT_ID;
  if (!emulatorHost || !projectId) {
    process.stderr.write('node-journal: set FIRESTORE_EMULATOR_HOST and FENCECHECK_PROJECT_ID (emulator only)\n');
    process.exit(2);
  }
  const db = journal.openFirestore(projectId);
  const inFlight = new Set();
  const pending = new Set();
  let greeted = false;

  const send = (answer) => process.stdout.write(`${JSON.stringify(answer)}\n`);

  async function operate(id, request, line) {
    const [operation, names] = OPERATIONS[request.op];
    const { args } = request;
    if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new ProtocolError('args must be an object');
    const given = Object.keys(args);
    if (given.length !== names.length || !names.every((name) => Object.hasOwn(args, name))) {
      throw new ProtocolError(`args of ${request.op} must be exactly: ${names.join(', ')}`);
    }
    const now = time.parseIso(request.now);
    if (now === null) throw new ProtocolError('now must be ISO 8601 UTC with six fraction digits, like 2026-01-01T00:00:00.000000+00:00');
    if (floatDepth(line) > 1) return { id, error: { code: 'invalid_command_input' } }; // see floatDepth
    if (floatDepth(line) === 1) throw new ProtocolError('a top-level number must be an integer');
    const clock = () => time.toTimestamp(now);
    try {
      return { id, output: await operation({ ...args, db, clock }) };
    } catch (error) {
      if (error instanceof journal.CommerceCommandJournalError) return { id, error: { code: error.code } };
      throw error;
    }
  }

  async function answer(line) {
    let request;
    try {
      request = JSON.parse(line);
    } catch {
      return { id: null, protocolError: 'a request must be one JSON object on one line' };
    }
    if (request === null || typeof request !== 'object' || Array.isArray(request)) {
      return { id: null, protocolError: 'a request must be a JSON object' };
    }
    const { id } = request;
    if (!validId(id)) return { id: null, protocolError: 'id must be a non-negative integer or a non-empty string' };
    if (inFlight.has(id)) return { id, protocolError: 'id is already in flight' };
    inFlight.add(id);
    try {
      if (request.op === 'hello') {
        const versions = request.versions;
        if (request.protocol !== PROTOCOL || !Array.isArray(versions) || !versions.includes(VERSION)) {
          return { id, protocolError: `this implementation speaks ${PROTOCOL} version ${VERSION} only` };
        }
        greeted = true;
        return {
          id,
          output: {
            protocol: PROTOCOL,
            version: VERSION,
            system: 'journal',
            implementation: variant === null ? 'node-journal' : `node-journal --variant ${variant}`,
            projectId,
          },
        };
      }
      if (!greeted) return { id, protocolError: 'the first request must be hello' };
      if (!Object.hasOwn(OPERATIONS, request.op)) return { id, protocolError: 'unknown op' };
      return await operate(id, request, line);
    } catch (error) {
      if (error instanceof ProtocolError) return { id, protocolError: error.message };
      // A bug or an unclassified failure of the implementation: never a contract answer.
      process.stderr.write(`node-journal: request ${JSON.stringify(id)} failed: ${error && error.stack}\n`);
      return { id, implementationError: String((error && error.name) || 'Error') };
    } finally {
      inFlight.delete(id);
    }
  }

  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (line.trim() === '') return;
    const job = answer(line).then(send);
    pending.add(job);
    job.finally(() => pending.delete(job));
  });
  lines.on('close', async () => {
    await Promise.allSettled([...pending]);
    process.exit(0);
  });
}

main();
