'use strict';
// Deterministic identities (SPEC.md, "Identity and fingerprints"): length-framed, domain-separated SHA-256.

const crypto = require('node:crypto');

const TERMINAL_COMMITMENT_KIND = 'business_record_digest';

function frame(text) {
  const data = Buffer.from(text, 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  return Buffer.concat([length, data]);
}

function digest(...fields) {
  const hash = crypto.createHash('sha256');
  for (const field of fields) hash.update(frame(field));
  return hash.digest('hex');
}

// Code-point order, as SPEC.md fixes it. JavaScript's default sort compares UTF-16 code units, which puts
// U+E000..U+FFFF after the astral planes; comparing code point by code point does not.
function compareCodePoints(a, b) {
  const left = [...a];
  const right = [...b];
  for (let i = 0; i < Math.min(left.length, right.length); i += 1) {
    const difference = left[i].codePointAt(0) - right[i].codePointAt(0);
    if (difference !== 0) return difference;
  }
  return left.length - right.length;
}

// Keys sorted by code point, `,` and `:`, non-ASCII kept. JSON.stringify escapes exactly what Python's
// json.dumps(ensure_ascii=False) escapes for well-formed strings (quote, backslash, controls below U+0020 with
// the same short forms and lowercase \u00xx); inputs have been checked to hold only such strings and integers.
function canonicalJson(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort(compareCodePoints);
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`).join(',')}}`;
}

const commandKeyHash = (environment, kind, value, commandId) =>
  digest('commerce-command-key', '1', environment, kind, value, commandId);
const payloadFingerprint = (keyHash, canonicalPayload) =>
  digest('commerce-command-payload', '1', keyHash, canonicalPayload);
const leaseOwnerFingerprint = (keyHash, leaseId) => digest('commerce-command-lease-owner', '1', keyHash, leaseId);
const terminalCommitmentHash = (keyHash, referenceFingerprint) =>
  digest('commerce-command-terminal-commitment', '1', keyHash, TERMINAL_COMMITMENT_KIND, referenceFingerprint);

const rootPath = (keyHash) => `checkoutRequests/${keyHash}`;
const lifecyclePath = (keyHash) => `checkoutRequests/${keyHash}/lifecycle/current`;
const auditPath = (keyHash, revision) => `auditEvents/commerce_command_${keyHash}_${String(revision).padStart(10, '0')}`;

module.exports = {
  TERMINAL_COMMITMENT_KIND,
  canonicalJson,
  commandKeyHash,
  payloadFingerprint,
  leaseOwnerFingerprint,
  terminalCommitmentHash,
  rootPath,
  lifecyclePath,
  auditPath,
};
