// English plural forms: only the messages whose English changes with the number.
// Every other English message is the text written where it is used.
export default {
 "In {n} days": {"one": "In {n} day", "other": "In {n} days"},
 "{n} addresses at once per server": {"one": "{n} address at once per server", "other": "{n} addresses at once per server"},
 "{n} days": {"one": "{n} day", "other": "{n} days"},
 "{n} days from the first connection": {"one": "{n} day from the first connection", "other": "{n} days from the first connection"},
 "{n} devices": {"one": "{n} device", "other": "{n} devices"},
 "{n} entries": {"one": "{n} entry", "other": "{n} entries"},
 "{n} users": {"one": "{n} user", "other": "{n} users"}
};
