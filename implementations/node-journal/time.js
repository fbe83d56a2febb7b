'use strict';
// Instants as integer microseconds since the epoch (JS numbers are exact up to 2**53 us, year 2255): the
// contract's precision. The trusted clock reading arrives as ISO 8601 with exactly six fraction digits and a
// +00:00 offset (the form fencecheck/checker/history_codec.py writes); Date is never used, it has milliseconds only.

const { Timestamp } = require('firebase-admin/firestore');

const LEASE_DURATION = 60 * 1000000;
const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})\+00:00$/;

// The microsecond instant of an ISO 8601 reading, or null when the text is not that exact form or no real time.
function parseIso(text) {
  const match = typeof text === 'string' ? ISO.exec(text) : null;
  if (match === null) return null;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
  if (year < 1) return null;
  const millis = Date.UTC(year, month - 1, day, hour, minute, second);
  const back = new Date(millis);
  // Date.UTC rolls an impossible date over (Feb 30 -> Mar 2): refuse instead. Years below 100 are
  // mapped to 19xx by Date.UTC, so set the full year explicitly.
  back.setUTCFullYear(year, month - 1, day);
  if (back.getUTCFullYear() !== year || back.getUTCMonth() !== month - 1 || back.getUTCDate() !== day) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  return Math.floor(back.getTime() / 1000) * 1000000 + Number(match[7]);
}

const fromTimestamp = (timestamp) => timestamp.seconds * 1000000 + timestamp.nanoseconds / 1000;

function toTimestamp(micros) {
  const seconds = Math.floor(micros / 1000000);
  return new Timestamp(seconds, (micros - seconds * 1000000) * 1000);
}

// The seeds' output form of a stored time: { seconds, nanoseconds }, frozen.
function leaseTimestamp(micros) {
  const seconds = Math.floor(micros / 1000000);
  return Object.freeze({ seconds, nanoseconds: (micros - seconds * 1000000) * 1000 });
}

module.exports = { LEASE_DURATION, parseIso, fromTimestamp, toTimestamp, leaseTimestamp };
