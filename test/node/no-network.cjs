// Preloaded (node --require ./no-network.cjs) into a tool that must work
// offline: any attempt to reach the network — a DNS lookup or a socket
// connection to anything but a local path — is written to stderr as
// "no-network: ..." and fails. The Go test that runs the tool fails on
// that line.
"use strict";
const net = require("node:net");
const dns = require("node:dns");

function refuse(what) {
  process.stderr.write("no-network: " + what + "\n");
  const err = new Error("no-network: " + what);
  err.code = "ENETUNREACH";
  return err;
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const opts = args[0] && typeof args[0] === "object" && !Array.isArray(args[0]) ? args[0] : null;
  if (opts && opts.path) {
    return connect.apply(this, args); // a local socket
  }
  const target = opts ? `${opts.host || "localhost"}:${opts.port}` : `${args[1] || "localhost"}:${args[0]}`;
  const err = refuse("connect " + target);
  process.nextTick(() => this.destroy(err));
  return this;
};

dns.lookup = function (host, ...rest) {
  const cb = rest[rest.length - 1];
  const err = refuse("lookup " + host);
  if (typeof cb === "function") process.nextTick(() => cb(err));
};
dns.promises.lookup = async (host) => { throw refuse("lookup " + host); };
