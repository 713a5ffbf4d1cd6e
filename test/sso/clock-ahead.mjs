// Loaded with `node --import` into a calltrace process to put its clock CLOCK_AHEAD_SECONDS ahead of
// the provider's: every ID token the provider issues then looks expired to that process.
const ahead = Number(process.env.CLOCK_AHEAD_SECONDS ?? "0") * 1000;
const realNow = Date.now;
Date.now = () => realNow() + ahead;
