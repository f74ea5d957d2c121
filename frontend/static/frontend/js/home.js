/* The rater's start page: the ranking studies they are a member of, if any. */
import { api } from "./api.js";

async function listRankingStudies() {
  const section = document.getElementById("ranking-studies");
  if (!section) return;
  let response;
  try {
    response = await api("/api/v1/my/ranking-studies/");
  } catch {
    return;
  }
  if (!response.ok || !Array.isArray(response.data) || !response.data.length) return;
  const list = document.getElementById("study-list");
  list.replaceChildren(...response.data.map((study) => {
    const tile = Object.assign(document.createElement("li"), { className: "tile" });
    const title = Object.assign(document.createElement("h3"), { textContent: study.name });
    const dataset = Object.assign(document.createElement("p"), { className: "muted", textContent: study.dataset });
    const link = Object.assign(document.createElement("a"), { className: "button primary", href: `/rank/${study.id}/`, textContent: "Start ordering" });
    tile.append(title, dataset, link);
    return tile;
  }));
  section.hidden = false;
}

listRankingStudies();
