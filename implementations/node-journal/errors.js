'use strict';
// The journal's one error type: a fixed code and a fixed message per code (SPEC.md, "Errors"). Built from the
// code alone, frozen, and never given a cause, so nothing caller-supplied or stored can reach it.

const MESSAGES = Object.freeze({
  invalid_command_input: 'The command input does not meet the documented input rules; correct it and retry.',
  command_not_registered: 'The command is not registered; register it before leasing or finishing it.',
  command_conflict:
    'This command identity is already registered with another command type, endpoint schema version ' +
    'or payload; use a new command id for a different command.',
  unrecognized_record:
    'A stored journal record is not a valid record of this contract; it was left untouched for review.',
  lease_rejected: 'The lease is not held by this worker at this fence epoch, or it has expired.',
  terminal_conflict: 'The command already reached a different terminal state or commitment.',
  journal_unavailable: 'The journal is unavailable; retry the whole call later with the same ids.',
});

class CommerceCommandJournalError extends Error {
  constructor(code) {
    if (!Object.prototype.hasOwnProperty.call(MESSAGES, code)) throw new TypeError('unknown journal error code');
    super(MESSAGES[code]);
    Object.defineProperty(this, 'name', { value: 'CommerceCommandJournalError' });
    Object.defineProperty(this, 'code', { value: code, enumerable: true });
    delete this.stack; // a stack names our files and lines only, but the error stays fixed-shape without it
    Object.freeze(this);
  }
}

const journalError = (code) => new CommerceCommandJournalError(code);

module.exports = { MESSAGES, ERROR_CODES: Object.freeze(Object.keys(MESSAGES)), CommerceCommandJournalError, journalError };
