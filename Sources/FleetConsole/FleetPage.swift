/// The live fleet page `taxifleet serve` sends: one self-contained document (no tiles, no
/// scripts from elsewhere) that draws the snapshot of `/fleet.json` and redraws it on every
/// server-sent event of `/events`. Element ids are stable (`row-{unit}`, `taxi-{unit}`,
/// `zone-{id}`, `rollout`), so a browser test can find what it checks.
public enum FleetPage {
    public static let html = #"""
    <!DOCTYPE html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <title>taxifleet</title>
    <style>
      body { font: 14px system-ui, sans-serif; margin: 1em; color: #222; }
      header { display: flex; gap: 2em; align-items: baseline; }
      #map { width: 100%; height: 420px; border: 1px solid #ccc; background: #f7f7f4; }
      .zone { fill: #cde; fill-opacity: 0.5; stroke: #58a; }
      .zone-label { fill: #357; }
      .taxi { stroke: #000; stroke-width: 1; }
      .taxi.offline { fill-opacity: 0.15; stroke-dasharray: 2 2; }
      table { border-collapse: collapse; margin-top: 1em; }
      th, td { padding: 2px 8px; text-align: left; border-bottom: 1px solid #eee; }
      tr.offline td { color: #999; }
      #rollout .refusal { color: #a00; }
    </style>
    </head>
    <body>
    <header><h1 id="title">taxifleet</h1><span id="counts"></span><span id="link">connecting</span></header>
    <svg id="map" xmlns="http://www.w3.org/2000/svg"></svg>
    <section id="rollout"></section>
    <table id="fleet"><thead><tr>
      <th>unit</th><th>online</th><th>software</th><th>config</th><th>driver</th><th>state</th><th>zone</th><th>fix age</th><th>outbox</th><th>aside</th>
    </tr></thead><tbody></tbody></table>
    <script>
    "use strict";
    const colours = { available: "#2a2", offered: "#eb0", en_route: "#26c", at_pickup: "#82c", on_board: "#c22",
                      paused: "#999", off_duty: "#555", panic: "#f0f" };
    const svg = "http://www.w3.org/2000/svg";
    function element(name, attributes, text) {
      const node = document.createElementNS(svg, name);
      for (const key in attributes) node.setAttribute(key, attributes[key]);
      if (text !== undefined) node.textContent = text;
      return node;
    }
    function cell(row, text) { const td = row.insertCell(); td.textContent = text === undefined ? "-" : String(text); }
    function age(seconds) {
      if (seconds === undefined) return "-";
      if (seconds < 60) return seconds + "s";
      if (seconds < 3600) return Math.floor(seconds / 60) + "m" + String(seconds % 60).padStart(2, "0") + "s";
      return Math.floor(seconds / 3600) + "h" + String(Math.floor(seconds % 3600 / 60)).padStart(2, "0") + "m";
    }
    function drawMap(fleet) {
      const map = document.getElementById("map");
      map.replaceChildren();
      const points = [];
      for (const zone of fleet.zones) for (const p of zone.polygon) points.push(p);
      for (const unit of fleet.units) if (unit.lat !== undefined) points.push([unit.lat, unit.lon]);
      if (points.length === 0) return;
      let [south, north, west, east] = [90, -90, 180, -180];
      for (const [lat, lon] of points) {
        south = Math.min(south, lat); north = Math.max(north, lat);
        west = Math.min(west, lon); east = Math.max(east, lon);
      }
      // Equirectangular, scaled by the cosine of the middle latitude: true enough for a city.
      const scale = Math.cos((south + north) / 2 * Math.PI / 180);
      const margin = Math.max(north - south, (east - west) * scale, 0.002) * 0.08;
      const width = (east - west) * scale + 2 * margin, height = north - south + 2 * margin;
      map.setAttribute("viewBox", `0 0 ${width} ${height}`);
      const x = lon => (lon - west) * scale + margin, y = lat => north - lat + margin;
      const radius = Math.max(width, height) / 120;
      for (const zone of fleet.zones) {
        // The drawing is in degrees: strokes and text are sized to the taxis, not to CSS pixels.
        map.appendChild(element("polygon", { id: "zone-" + zone.id, class: "zone", "stroke-width": radius / 4,
          points: zone.polygon.map(([lat, lon]) => `${x(lon)},${y(lat)}`).join(" ") }));
        const [lat, lon] = zone.polygon[0];
        map.appendChild(element("text", { class: "zone-label", x: x(lon), y: y(lat), "font-size": radius * 3 }, zone.id));
      }
      for (const unit of fleet.units) {
        if (unit.lat === undefined) continue;
        const taxi = element("circle", { id: "taxi-" + unit.unit, class: "taxi" + (unit.online ? "" : " offline"),
          cx: x(unit.lon), cy: y(unit.lat), r: radius, fill: colours[unit.state] || "#fff", "stroke-width": radius / 5,
          "data-lat": unit.lat, "data-lon": unit.lon, "data-state": unit.state || "", "data-online": unit.online });
        taxi.appendChild(element("title", {}, `${unit.unit} ${unit.state || ""}`));
        map.appendChild(taxi);
      }
    }
    function drawTable(fleet) {
      const body = document.querySelector("#fleet tbody");
      body.replaceChildren();
      for (const unit of fleet.units) {
        const row = body.insertRow();
        row.id = "row-" + unit.unit;
        row.className = unit.online ? "online" : "offline";
        row.dataset.online = unit.online;
        cell(row, unit.unit); cell(row, unit.online ? "yes" : "no"); cell(row, unit.software);
        cell(row, Object.entries(unit.config_versions).map(([scope, v]) => scope[0] + v).join(" ") || "-");
        cell(row, unit.driver); cell(row, unit.state); cell(row, unit.zone); cell(row, age(unit.fix_age_s));
        cell(row, unit.outbox);
        cell(row, Object.values(unit.aside).reduce((a, b) => a + b, 0) || "-");
      }
      const online = fleet.units.filter(u => u.online).length;
      document.getElementById("counts").textContent = `${online} online, ${fleet.units.length - online} offline`;
    }
    function drawRollout(fleet) {
      const rollout = fleet.rollout, section = document.getElementById("rollout");
      section.replaceChildren();
      if (rollout.version === undefined) { section.textContent = "no fleet config document"; return; }
      const line = document.createElement("p");
      const results = Object.entries(rollout.results).map(([result, n]) => `${result.replace("_", " ")} ${n}`).join(", ");
      line.textContent = `fleet config version ${rollout.version}: held by ${rollout.holding} of ${rollout.units} units` +
        (results ? `; acks: ${results}` : "");
      section.appendChild(line);
      for (const refusal of rollout.refusals) {
        const item = document.createElement("p");
        item.className = "refusal";
        item.textContent = `${refusal.unit} ${refusal.result}` + (refusal.reason ? ` (${refusal.reason})` : "") +
          (refusal.errors ? ": " + refusal.errors.join("; ") : "");
        section.appendChild(item);
      }
    }
    function draw(fleet) {
      document.getElementById("title").textContent = "fleet " + fleet.fleet;
      drawMap(fleet); drawTable(fleet); drawRollout(fleet);
      document.body.dataset.revision = (Number(document.body.dataset.revision || 0) + 1).toString();
    }
    const events = new EventSource("events");
    events.onopen = () => { document.getElementById("link").textContent = "live"; };
    events.onerror = () => { document.getElementById("link").textContent = "reconnecting"; };
    events.onmessage = message => draw(JSON.parse(message.data));
    </script>
    </body>
    </html>
    """#
}
