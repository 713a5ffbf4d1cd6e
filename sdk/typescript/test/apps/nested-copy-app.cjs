// A dependency brings its own copy of openai, which the application loads too.
const { init, stats } = require("calltrace-sdk");
const warnings = [];
init({ onWarning: (message) => warnings.push(message) });
require("openai");
require("legacy-client");
stats();
stats();
console.log(JSON.stringify({ warnings }));
