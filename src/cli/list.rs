//! `list`: the catalog's cells, each with its clause and status, and the
//! mutants of the reference store, as text or JSON (each cell with the
//! mutants that are for it).

use crashcells_protocol::Mutant;

use crate::catalog::Catalog;

/// The list as `list` prints it: JSON when `json`, else text.
pub(super) fn render(catalog: &Catalog, json: bool) -> String {
    if json {
        let cells: Vec<ListedCell> = catalog.cells.iter().map(ListedCell::of).collect();
        return serde_json::to_string_pretty(&cells).expect("cells serialize") + "\n";
    }
    let mut text = String::new();
    for c in &catalog.cells {
        let status = match &c.reason {
            Some(r) => format!("stub: {r}"),
            None => format!("{:?} on {:?} legs", c.status, c.legs).to_lowercase(),
        };
        text.push_str(&format!("{} {:<20} {}\n    {}\n", c.number, c.id, status, c.clause));
    }
    text.push_str("\nmutants (run --mutant NAME: broken variants of the reference store):\n");
    let width = Mutant::names().iter().map(|n| n.len()).max().unwrap_or(0);
    for m in Mutant::ALL {
        text.push_str(&format!("  {:<width$}  cell {}: {}\n", m.as_str(), m.cell(), m.breaks()));
    }
    text
}

/// A cell as `list --format json` shows it: the catalog's fields, then the
/// mutants that are for it (an array of cells stays one for its readers).
#[derive(serde::Serialize)]
struct ListedCell<'a> {
    #[serde(flatten)]
    cell: &'a crate::catalog::CellSpec,
    mutants: Vec<ListedMutant>,
}

#[derive(serde::Serialize)]
struct ListedMutant {
    name: &'static str,
    breaks: &'static str,
}

impl ListedCell<'_> {
    fn of(cell: &crate::catalog::CellSpec) -> ListedCell<'_> {
        let mutants = Mutant::ALL
            .into_iter()
            .filter(|m| m.cell() == cell.number)
            .map(|m| ListedMutant { name: m.as_str(), breaks: m.breaks() })
            .collect();
        ListedCell { cell, mutants }
    }
}
