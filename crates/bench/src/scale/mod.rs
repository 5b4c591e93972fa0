//! The scaling experiments' results (seed 000's two tables): one row per core count (or per
//! number of data directories, for the disk sweep), the printed table, `scale.csv` and
//! `scale.svg` (rate against cores or disks, with the ideal line); where the loader runs
//! (`--loader-cores`, [`loader_placement`]); the write path's stages from the server's
//! `/metrics` ([`stages`]); and the query sweep's rows ([`queries`]).

mod loader;
pub mod queries;
pub mod stages;

use std::io;
use std::path::Path;
use std::process::Command;

use plotters::prelude::*;

pub use self::loader::{LoaderPlacement, format_cpu_list, loader_placement, parse_cpu_list};
use self::stages::StageCosts;

/// What a sweep varies from row to row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    /// The cores the server may run on.
    Cores,
    /// The data directories (one per disk) the server spreads its shards over.
    Disks,
}

impl Sweep {
    /// The swept quantity of `row`.
    pub fn of(self, row: &ScaleRow) -> usize {
        match self {
            Sweep::Cores => row.cores,
            Sweep::Disks => row.disks,
        }
    }

    fn axis(self) -> &'static str {
        match self {
            Sweep::Cores => "server cores",
            Sweep::Disks => "data directories (disks)",
        }
    }
}

/// One server run confined to `cores` cores, with its data on `disks` directories.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ScaleRow {
    /// Cores the server may run on.
    pub cores: usize,
    /// Data directories.
    pub disks: usize,
    /// Server shards.
    pub shards: usize,
    /// Loader workers.
    pub workers: usize,
    /// Rows per second.
    pub rows_per_s: f64,
    /// Points per second.
    pub points_per_s: f64,
    /// Server CPU, percent of its `cores` cores.
    pub cpu_percent: Option<f64>,
    /// Disk writes, MB/s.
    pub disk_mb_per_s: Option<f64>,
    /// Server peak resident memory, MB.
    pub memory_mb: Option<f64>,
    /// Server CPU time (user + system, /proc) over the load's clock per point written, ns.
    pub server_cpu_ns_per_point: Option<f64>,
    /// The loader's (the `bench scale` process's) CPU time over the load's clock, percent
    /// of one core.
    pub loader_cpu_percent: Option<f64>,
    /// The cores the loader was pinned to (`taskset -c` form), or `unpinned`.
    pub loader_cores: String,
    /// Whether the loader could run on the server's cores (so it competed with it).
    pub loader_shares_cores: bool,
    /// Why the run's rates are not a rate (the load was too short), as its write report
    /// says; `None` for a rate.
    pub rate_withheld: Option<String>,
    /// Where the server's write time went, from its `/metrics`; `None` when the server
    /// does not count stages (or the scrapes failed).
    pub stages: Option<StageCosts>,
}

/// Scaling efficiency of each row: rate(k) / (k x rate(1)), k the swept quantity, with
/// rate(1) the row where k is 1 (or, without one, the smallest k's rate per unit).
pub fn efficiencies(rows: &[ScaleRow], sweep: Sweep) -> Vec<f64> {
    let rates: Vec<(usize, f64)> = rows.iter().map(|r| (sweep.of(r), r.points_per_s)).collect();
    efficiencies_of(&rates)
}

/// Scaling efficiency of each `(k, rate)`: rate / (k x rate(1)), with rate(1) the rate
/// where k is 1 (or, without one, the smallest k's rate divided by its k).
pub fn efficiencies_of(rates: &[(usize, f64)]) -> Vec<f64> {
    let base = rate_per_unit_of(rates);
    rates
        .iter()
        .map(|(k, rate)| {
            if base > 0.0 {
                rate / (*k as f64 * base)
            } else {
                0.0
            }
        })
        .collect()
}

/// rate(1): the rate of the row where the swept quantity is 1, or the smallest one's rate
/// divided by its quantity.
fn rate_per_unit(rows: &[ScaleRow], sweep: Sweep) -> f64 {
    let rates: Vec<(usize, f64)> = rows.iter().map(|r| (sweep.of(r), r.points_per_s)).collect();
    rate_per_unit_of(&rates)
}

fn rate_per_unit_of(rates: &[(usize, f64)]) -> f64 {
    rates
        .iter()
        .find(|(k, _)| *k == 1)
        .or_else(|| rates.iter().min_by_key(|(k, _)| *k))
        .map(|(k, rate)| rate / (*k).max(1) as f64)
        .unwrap_or(0.0)
}

pub(crate) fn opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "n/a".into(), |v| format!("{v:.decimals$}"))
}

/// Thousands separators, as the seed writes rates (`380,000`).
pub fn grouped(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The measured columns both tables share, from rows per second to the end of the row:
/// rates, CPU, disk, memory, efficiency, then server CPU ns/point, loader CPU and cores.
fn measured_cells(row: &ScaleRow, efficiency: f64) -> String {
    format!(
        "{} | {} | {}% | {} | {} | {efficiency:.2} | {} | {}% | {} |",
        grouped(row.rows_per_s),
        grouped(row.points_per_s),
        opt(row.cpu_percent, 0),
        opt(row.disk_mb_per_s, 1),
        opt(row.memory_mb, 0),
        opt(row.server_cpu_ns_per_point, 0),
        opt(row.loader_cpu_percent, 0),
        row.loader_cores
    )
}

/// Seed 000's table, then the server's CPU per point and the loader's CPU and cores. A
/// row where the loader shared the server's cores is marked: there it competed with the
/// server (`machine_cores` is named in the footnote).
pub fn render_table(rows: &[ScaleRow], machine_cores: usize) -> String {
    let mut out = String::from(
        "CPU Cores | Writers | Rows per Second | Points per Second | CPU Usage | Disk I/O (MBps) | Peak Memory (MB) | Scaling Efficiency | Server CPU ns/point | Loader CPU | Loader Cores |\n\
         ---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut marked = false;
    for (row, efficiency) in rows.iter().zip(efficiencies(rows, Sweep::Cores)) {
        let mark = if row.loader_shares_cores {
            marked = true;
            " *"
        } else {
            ""
        };
        out.push_str(&format!(
            "{}{mark} | {} | {}\n",
            row.cores,
            row.workers,
            measured_cells(row, efficiency)
        ));
    }
    if marked {
        out.push_str(&format!(
            "* the loader shares the server's cores at this k (the machine has {machine_cores} \
             cores, or --loader-cores overlaps the server's): it competes with the server, so \
             the rate understates the server.\n"
        ));
    }
    out
}

/// Seed 000's disk table: one row per number of data directories, then the server's CPU
/// per point and the loader's CPU and cores. CPU usage is of the cores the server may use.
pub fn render_disk_table(rows: &[ScaleRow]) -> String {
    let mut out = String::from(
        "Disks | Shards | Writers | Rows per Second | Points per Second | CPU Usage | Disk I/O (MBps) | Peak Memory (MB) | Scaling Efficiency | Server CPU ns/point | Loader CPU | Loader Cores |\n\
         ---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (row, efficiency) in rows.iter().zip(efficiencies(rows, Sweep::Disks)) {
        out.push_str(&format!(
            "{} | {} | {} | {}\n",
            row.disks,
            row.shards,
            row.workers,
            measured_cells(row, efficiency)
        ));
    }
    out
}

/// A CSV field: quoted (with quotes doubled) when it holds a comma, a quote or a line
/// break.
pub(crate) fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}

/// The header of `scale.csv`.
pub const SCALE_CSV_HEADER: &str = "cores,disks,shards,workers,rows_per_s,points_per_s,cpu_percent,disk_mb_per_s,memory_mb,efficiency,server_cpu_ns_per_point,loader_cpu_percent,loader_cores,loader_shares_cores,shard_busy,rate_withheld";

/// The rows as CSV with a header line ([`SCALE_CSV_HEADER`]); efficiency along `sweep`.
/// Figures not measured are empty.
pub fn render_csv(rows: &[ScaleRow], sweep: Sweep) -> String {
    let mut out = format!("{SCALE_CSV_HEADER}\n");
    let field = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.3}"));
    for (row, efficiency) in rows.iter().zip(efficiencies(rows, sweep)) {
        out.push_str(&format!(
            "{},{},{},{},{:.1},{:.1},{},{},{},{:.4},{},{},{},{},{},{}\n",
            row.cores,
            row.disks,
            row.shards,
            row.workers,
            row.rows_per_s,
            row.points_per_s,
            field(row.cpu_percent),
            field(row.disk_mb_per_s),
            field(row.memory_mb),
            efficiency,
            field(row.server_cpu_ns_per_point),
            field(row.loader_cpu_percent),
            csv_field(&row.loader_cores),
            row.loader_shares_cores,
            row.stages
                .as_ref()
                .and_then(|s| s.shard_busy)
                .map_or_else(String::new, |b| format!("{b:.0}")),
            row.rate_withheld.is_some()
        ));
    }
    out
}

/// Draws points/s against the swept quantity, measured and ideal (k x rate(1)), as an SVG
/// file.
pub fn write_svg(rows: &[ScaleRow], sweep: Sweep, path: &Path) -> io::Result<()> {
    let to_io =
        |e: &dyn std::fmt::Display| io::Error::other(format!("drawing {}: {e}", path.display()));
    let max_cores = rows.iter().map(|r| sweep.of(r)).max().unwrap_or(1).max(1);
    let base = rate_per_unit(rows, sweep);
    let top = rows
        .iter()
        .map(|r| r.points_per_s)
        .fold(base * max_cores as f64, f64::max)
        .max(1.0)
        * 1.1;
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| to_io(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Strata write rate against {}", sweep.axis()),
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(0f64..(max_cores as f64 + 0.5), 0f64..top)
        .map_err(|e| to_io(&e))?;
    chart
        .configure_mesh()
        .x_desc(sweep.axis())
        .y_desc("points/s")
        .x_labels(max_cores + 1)
        .y_label_formatter(&|v| grouped(*v))
        .draw()
        .map_err(|e| to_io(&e))?;
    let measured: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (sweep.of(r) as f64, r.points_per_s))
        .collect();
    chart
        .draw_series(LineSeries::new(
            [(0.0, 0.0), (max_cores as f64, base * max_cores as f64)],
            BLACK.mix(0.4).stroke_width(1),
        ))
        .map_err(|e| to_io(&e))?
        .label("ideal: k x rate(1)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    chart
        .draw_series(LineSeries::new(measured.clone(), BLUE.stroke_width(2)))
        .map_err(|e| to_io(&e))?
        .label("measured")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    chart
        .draw_series(measured.iter().map(|p| Circle::new(*p, 4, BLUE.filled())))
        .map_err(|e| to_io(&e))?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| to_io(&e))?;
    root.present().map_err(|e| to_io(&e))
}

/// The cores a server confined to `cores` cores runs on, in `taskset -c` form: `0-(k-1)`.
pub fn cpu_list(cores: usize) -> String {
    match cores {
        0 | 1 => "0".into(),
        k => format!("0-{}", k - 1),
    }
}

/// `taskset -c 0-(k-1) <program> <args…>`: the program confined to the first `cores` cores.
pub fn affinity_command(cores: usize, program: &Path, args: &[String]) -> Command {
    let mut command = Command::new("taskset");
    command
        .arg("-c")
        .arg(cpu_list(cores))
        .arg(program)
        .args(args);
    command
}

/// Checks that `taskset` (util-linux) can be run; the message says what to install.
pub fn check_taskset() -> Result<(), String> {
    match Command::new("taskset").arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`taskset --version` failed ({}): bench scale needs taskset (util-linux) to confine \
             the server to k cores",
            out.status
        )),
        Err(e) => Err(format!(
            "cannot run taskset ({e}): bench scale needs taskset from util-linux to confine the \
             server to k cores; install util-linux"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<ScaleRow> {
        vec![
            ScaleRow {
                cores: 1,
                disks: 1,
                shards: 1,
                workers: 2,
                rows_per_s: 100_000.0,
                points_per_s: 1_000_000.0,
                cpu_percent: Some(97.0),
                disk_mb_per_s: Some(12.5),
                memory_mb: Some(300.0),
                server_cpu_ns_per_point: Some(970.4),
                loader_cpu_percent: Some(55.0),
                loader_cores: "1".into(),
                loader_shares_cores: false,
                rate_withheld: None,
                stages: None,
            },
            ScaleRow {
                cores: 2,
                disks: 3,
                shards: 2,
                workers: 4,
                rows_per_s: 150_000.0,
                points_per_s: 1_500_000.0,
                cpu_percent: Some(90.0),
                disk_mb_per_s: None,
                memory_mb: Some(420.0),
                server_cpu_ns_per_point: None,
                loader_cpu_percent: None,
                loader_cores: "unpinned".into(),
                loader_shares_cores: true,
                rate_withheld: Some("too short".into()),
                stages: Some(StageCosts {
                    points: 10,
                    points_source: "server".into(),
                    stages: Vec::new(),
                    shard_busy: Some(7.0),
                }),
            },
        ]
    }

    #[test]
    fn efficiency_is_rate_over_k_times_rate_one() {
        assert_eq!(efficiencies(&rows(), Sweep::Cores), vec![1.0, 0.75]);
        assert_eq!(efficiencies(&rows(), Sweep::Disks), vec![1.0, 0.5]);
        assert!(efficiencies(&[], Sweep::Cores).is_empty());
    }

    #[test]
    fn table_marks_the_row_where_the_loader_competes() {
        let table = render_table(&rows(), 2);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[2],
            "1 | 2 | 100,000 | 1,000,000 | 97% | 12.5 | 300 | 1.00 | 970 | 55% | 1 |"
        );
        assert_eq!(
            lines[3],
            "2 * | 4 | 150,000 | 1,500,000 | 90% | n/a | 420 | 0.75 | n/a | n/a% | unpinned |"
        );
        assert!(lines[4].contains("competes"), "{table}");
        assert!(lines[4].contains("has 2 cores"), "{table}");
        let mut apart = rows();
        apart[1].loader_shares_cores = false;
        assert!(!render_table(&apart, 16).contains("competes"));
        assert_eq!(grouped(5_730_000.4), "5,730,000");
        assert_eq!(grouped(999.0), "999");
    }

    #[test]
    fn csv_and_svg_are_written() {
        let csv = render_csv(&rows(), Sweep::Cores);
        assert_eq!(
            csv.lines().collect::<Vec<_>>(),
            vec![
                "cores,disks,shards,workers,rows_per_s,points_per_s,cpu_percent,disk_mb_per_s,memory_mb,efficiency,server_cpu_ns_per_point,loader_cpu_percent,loader_cores,loader_shares_cores,shard_busy,rate_withheld",
                "1,1,1,2,100000.0,1000000.0,97.000,12.500,300.000,1.0000,970.400,55.000,1,false,,false",
                "2,3,2,4,150000.0,1500000.0,90.000,,420.000,0.7500,,,unpinned,true,7,true",
            ]
        );
        assert!(
            render_csv(&rows(), Sweep::Disks)
                .lines()
                .nth(2)
                .is_some_and(|l| l.contains(",0.5000,"))
        );
        let mut listed = rows();
        listed[0].loader_cores = "1,3-5".into();
        assert!(render_csv(&listed, Sweep::Cores).contains(",\"1,3-5\",false,"));
        let dir = std::env::temp_dir().join(format!("strata-scale-svg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scale.svg");
        write_svg(&rows(), Sweep::Disks, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("data directories"), "the disk sweep's axis");
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        assert!(svg.contains("points/s"));
        assert!(svg.contains("ideal"));
        assert!(svg.contains("<circle"), "measured points drawn");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn disk_table_has_seed_000s_columns() {
        let table = render_disk_table(&rows());
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("Disks | Shards | Writers | Rows per Second"));
        assert_eq!(
            lines[3],
            "3 | 2 | 4 | 150,000 | 1,500,000 | 90% | n/a | 420 | 0.50 | n/a | n/a% | unpinned |"
        );
    }

    #[test]
    fn affinity_command_pins_the_first_k_cores() {
        assert_eq!(cpu_list(1), "0");
        assert_eq!(cpu_list(2), "0-1");
        assert_eq!(cpu_list(12), "0-11");
        let command = affinity_command(
            2,
            Path::new("/bin/strata"),
            &["serve".to_string(), "--shards".to_string(), "2".to_string()],
        );
        assert_eq!(command.get_program(), "taskset");
        let args: Vec<_> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args, ["-c", "0-1", "/bin/strata", "serve", "--shards", "2"]);
    }

    #[test]
    fn efficiency_of_any_rates() {
        assert_eq!(
            efficiencies_of(&[(1, 10.0), (2, 15.0), (4, 40.0)]),
            [1.0, 0.75, 1.0]
        );
        // No k = 1: the smallest k's rate per unit.
        assert_eq!(efficiencies_of(&[(4, 40.0), (2, 30.0)]), [2.0 / 3.0, 1.0]);
        assert_eq!(efficiencies_of(&[(1, 0.0), (2, 5.0)]), [0.0, 0.0]);
    }
}
