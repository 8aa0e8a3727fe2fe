//! The report's SVG plots: latency of every operation, throughput over time, and availability
//! during each fault, with the fault windows shaded.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{availability as window_availability, secs, Report};
use crate::history::{FaultRecord, Op, Outcome};

const SIZE: (u32, u32) = (1200, 500);
const FONT: &str = "sans-serif";
const FAULT: RGBColor = RGBColor(90, 90, 220);
/// Latencies are drawn no lower than this (ms), the floor of the log scale.
const MIN_LATENCY_MS: f64 = 0.1;

const OUTCOMES: [(Outcome, RGBColor, &str); 3] = [
    (Outcome::Ok, RGBColor(0, 150, 0), "ok"),
    (Outcome::Failed, RGBColor(255, 140, 0), "failed"),
    (Outcome::Unknown, RGBColor(210, 0, 0), "unknown"),
];

type Chart<'a, Y> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>;

/// Every operation at (invoke time, latency), colored by outcome, on a log scale.
pub(super) fn latency(r: &Report) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let top = r.ops.iter().map(latency_ms).fold(10.0, f64::max) * 2.0;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("latency: {}", r.title), (FONT, 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_end(r), (MIN_LATENCY_MS..top).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("invoke time (s)")
            .y_desc("latency (ms)")
            .draw()?;
        shade_faults(&mut chart, r.faults, (MIN_LATENCY_MS, top))?;
        for (outcome, color, name) in OUTCOMES {
            let ops = r.ops.iter().filter(|op| op.outcome() == outcome);
            let points =
                ops.map(|op| Circle::new((secs(op.invoke), latency_ms(op)), 2, color.filled()));
            chart
                .draw_series(points)?
                .label(name)
                .legend(move |(x, y)| Circle::new((x, y), 3, color.filled()));
        }
        legend(&mut chart)?;
        root.present()?;
    }
    Ok(svg)
}

/// Operations completed per second, one line per outcome.
pub(super) fn throughput(r: &Report) -> anyhow::Result<String> {
    let end = x_end(r);
    let buckets = end.ceil() as usize;
    let mut counts = vec![[0usize; 3]; buckets];
    for op in r.ops {
        let bucket = (op.complete / 1_000_000) as usize;
        let column = OUTCOMES
            .iter()
            .position(|(o, ..)| *o == op.outcome())
            .unwrap_or_default();
        counts[bucket.min(buckets - 1)][column] += 1;
    }
    let top = counts.iter().flatten().copied().max().unwrap_or_default() as f64 * 1.1 + 1.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("throughput: {}", r.title), (FONT, 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..end, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("operations completed per second")
            .draw()?;
        shade_faults(&mut chart, r.faults, (0.0, top))?;
        for (column, (_, color, name)) in OUTCOMES.into_iter().enumerate() {
            let line = counts
                .iter()
                .enumerate()
                .map(|(i, c)| (i as f64 + 0.5, c[column] as f64));
            chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x - 8, y), (x + 8, y)], color.stroke_width(2))
                });
        }
        legend(&mut chart)?;
        root.present()?;
    }
    Ok(svg)
}

/// One bar per fault: the fraction of operations invoked during its window that were ok.
pub(super) fn availability(r: &Report) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("availability during faults: {}", r.title),
                (FONT, 18),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..r.faults.len().max(1) as f64 - 0.5, 0.0..1.1)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_desc("fault")
            .y_desc("ok fraction of operations invoked in the window")
            .draw()?;
        let centered =
            |size, v| TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Center, v));
        for (i, f) in r.faults.iter().enumerate() {
            let (x, share) = (i as f64, window_availability(r.ops, f));
            let height = share.unwrap_or_default();
            let value = share.map_or("no ops".to_string(), |a| format!("{:.0}%", a * 100.0));
            chart.draw_series([Rectangle::new(
                [(x - 0.35, 0.0), (x + 0.35, height)],
                FAULT.filled(),
            )])?;
            chart.draw_series([Text::new(
                value,
                (x, height + 0.01),
                centered(14, VPos::Bottom),
            )])?;
            // The fault's name goes under the axis, outside the plotting area.
            let (px, py) = chart.backend_coord(&(x, 0.0));
            root.draw(&Text::new(
                format!("#{i} {}", f.name),
                (px, py + 6),
                centered(13, VPos::Top),
            ))?;
        }
        root.present()?;
    }
    Ok(svg)
}

fn latency_ms(op: &Op) -> f64 {
    (op.complete.saturating_sub(op.invoke) as f64 / 1000.0).max(MIN_LATENCY_MS)
}

/// The end of the time axis (s): the run, or the last thing recorded, whichever is later.
fn x_end(r: &Report) -> f64 {
    let last_op = r.ops.iter().map(|op| op.complete).max().unwrap_or_default();
    let last_heal = r.faults.iter().map(|f| f.heal).max().unwrap_or_default();
    secs(r.duration_us.max(last_op).max(last_heal)).max(1.0)
}

/// Each fault window [start, heal] as a translucent rectangle spanning `y`, labeled at the top.
fn shade_faults<Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, Y>,
    faults: &[FaultRecord],
    (bottom, top): (f64, f64),
) -> anyhow::Result<()> {
    let style = TextStyle::from((FONT, 12).into_font()).color(&FAULT);
    for (i, f) in faults.iter().enumerate() {
        let (start, heal) = (secs(f.start), secs(f.heal));
        chart.draw_series([Rectangle::new(
            [(start, bottom), (heal, top)],
            FAULT.mix(0.15).filled(),
        )])?;
        chart.draw_series([Text::new(
            format!("#{i} {}", f.name),
            (start, top),
            style.clone(),
        )])?;
    }
    Ok(())
}

fn legend<Y: Ranged<ValueType = f64>>(chart: &mut Chart<'_, Y>) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
