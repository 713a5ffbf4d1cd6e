// Run from a folder where no provider package can be found.
const { init, stats } = require("calltrace-sdk");
const warnings = [];
init({ apiKey: "ct_x", onWarning: (message) => warnings.push(message) }).then(() => {
  console.log(JSON.stringify({ instrumented: stats().instrumented, warnings }));
});
