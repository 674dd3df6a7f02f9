/* Sortable tables: each header cell of a table marked data-sortable gets a button that sorts
   the rows by that column, ascending, then descending, and says so in aria-sort. Numbers sort
   as numbers (an interval by its lower bound, then its upper), text in natural order ("age=9"
   before "age=10"), empty cells (n/a, em dash) last either way; ties keep the rendered order.
   The page's Content-Security-Policy allows this script by its sha256 and nothing else, so it
   adds no inline handler. Without it the table keeps the order it was rendered in. */
(function () {
  "use strict";
  var collator = new Intl.Collator(undefined, {numeric: true, sensitivity: "base"});
  var NUMBER = /^[+-]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;
  var INTERVAL = /^\[(.+), (.+)\]$/;

  function number(text) {
    var t = text.replace(/\u2212/g, "-");
    if (t === "\u221e") { return Infinity; }
    if (t === "-\u221e") { return -Infinity; }
    return NUMBER.test(t) ? Number(t.replace(/,/g, "")) : NaN;
  }

  function sortKey(cell) {
    var text = cell ? cell.textContent.trim() : "";
    if (text === "" || text === "\u2014" || text === "n/a") { return null; }
    var single = number(text);
    if (!isNaN(single)) { return {numbers: [single]}; }
    var bounds = INTERVAL.exec(text);
    if (bounds) {
      var lower = number(bounds[1]), upper = number(bounds[2]);
      if (!isNaN(lower) && !isNaN(upper)) { return {numbers: [lower, upper]}; }
    }
    return {text: text};
  }

  function compareKeys(a, b) {
    if (a.numbers && b.numbers) {
      for (var i = 0; i < Math.min(a.numbers.length, b.numbers.length); i++) {
        if (a.numbers[i] !== b.numbers[i]) { return a.numbers[i] < b.numbers[i] ? -1 : 1; }
      }
      return a.numbers.length - b.numbers.length;
    }
    if (a.numbers) { return -1; }
    if (b.numbers) { return 1; }
    return collator.compare(a.text, b.text);
  }

  function sortBy(table, headers, column) {
    var header = headers[column];
    var direction = header.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    var sign = direction === "ascending" ? 1 : -1;
    var body = table.tBodies[0];
    var rows = Array.prototype.map.call(body.rows, function (row, index) {
      return {row: row, index: index, key: sortKey(row.cells[column])};
    });
    rows.sort(function (a, b) {
      if (a.key === null || b.key === null) {
        return a.key === b.key ? a.index - b.index : (a.key === null ? 1 : -1);
      }
      return sign * compareKeys(a.key, b.key) || a.index - b.index;
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
    headers.forEach(function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", direction);
  }

  Array.prototype.forEach.call(document.querySelectorAll("table[data-sortable]"), function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    headers.forEach(function (th, column) {
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, headers, column); });
    });
  });
}());
