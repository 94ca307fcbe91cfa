// `node --require` hook for otel.test.mjs: the process behaves as if no @opentelemetry package
// were installed (resolving one throws MODULE_NOT_FOUND), and records what was asked for.
'use strict';
const Module = require('node:module');

globalThis.__tideqRefused = [];
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === '@opentelemetry' || request.startsWith('@opentelemetry/')) {
    globalThis.__tideqRefused.push(request);
    const err = new Error(`Cannot find module '${request}'`);
    err.code = 'MODULE_NOT_FOUND';
    throw err;
  }
  return resolve.call(this, request, ...rest);
};
