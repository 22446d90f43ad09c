#!/usr/bin/env node
// Validate speedscope files against the JSON Schema shipped in the speedscope
// npm package (dist/release/file-format-schema.json, generated from
// src/lib/file-format-spec.ts), with ajv.  Versions are pinned in
// package.json / package-lock.json next to this file; install them with
// `npm ci` in this directory.
//
// usage: node validate_speedscope.js --gen TEST_FORMATS OUTDIR
//          (runs `TEST_FORMATS --write-only OUTDIR`, then validates every
//          OUTDIR/*.speedscope.json)
//        node validate_speedscope.js FILE...
//
// Exit status: 0 valid, 1 invalid, 77 skipped (node_modules missing).
'use strict';
const fs = require('fs');
const path = require('path');
const child = require('child_process');

const modules = path.join(__dirname, 'node_modules');
const schemaPath = path.join(modules, 'speedscope', 'dist', 'release', 'file-format-schema.json');
if (!fs.existsSync(schemaPath) || !fs.existsSync(path.join(modules, 'ajv'))) {
  console.log(`SKIP: ${modules} has no speedscope/ajv: run \`npm ci\` in ${__dirname}`);
  process.exit(77);
}
const Ajv = require(path.join(modules, 'ajv'));
const speedscopeVersion = require(path.join(modules, 'speedscope', 'package.json')).version;

let files = process.argv.slice(2);
if (files[0] === '--gen') {
  const [, bin, outdir] = files;
  fs.mkdirSync(outdir, {recursive: true});
  child.execFileSync(bin, ['--write-only', outdir], {stdio: 'inherit'});
  files = fs.readdirSync(outdir).filter(f => f.endsWith('.speedscope.json')).sort().map(f => path.join(outdir, f));
}
if (files.length === 0) {
  console.log('FAIL: no speedscope files to validate');
  process.exit(1);
}

const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
const ajv = new Ajv({allErrors: true, strict: false});
const validate = ajv.compile(schema);
const SCHEMA_ID = 'https://www.speedscope.app/file-format-schema.json';

let failed = 0;
for (const f of files) {
  const problems = [];
  let doc = null;
  try {
    // fatal: invalid UTF-8 is an error, not U+FFFD
    const text = new TextDecoder('utf-8', {fatal: true}).decode(fs.readFileSync(f));
    doc = JSON.parse(text);
  } catch (e) {
    problems.push(`not valid UTF-8 JSON: ${e.message}`);
  }
  if (doc) {
    if (!validate(doc)) problems.push(...validate.errors.map(e => `${e.instancePath} ${e.message}`));
    if (doc.$schema !== SCHEMA_ID) problems.push('$schema is not exact');
    // What speedscope's importer (src/lib/file-format.ts) throws on.
    for (const p of doc.profiles || []) {
      if (p.type !== 'sampled') continue;
      if (p.samples.length !== p.weights.length) problems.push(`${p.name}: samples.length != weights.length`);
      if (p.weights.some(w => !(w > 0))) problems.push(`${p.name}: a weight is not > 0`);
      const n = doc.shared.frames.length;
      if (p.samples.some(s => s.some(i => !Number.isInteger(i) || i < 0 || i >= n)))
        problems.push(`${p.name}: frame index out of range`);
    }
  }
  if (problems.length) {
    failed++;
    console.log(`FAIL ${f}:\n  ${problems.slice(0, 20).join('\n  ')}`);
  } else {
    console.log(`ok   ${f} (speedscope ${speedscopeVersion} schema)`);
  }
}
console.log(`${files.length - failed} valid, ${failed} invalid`);
process.exit(failed ? 1 : 0);
