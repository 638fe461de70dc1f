//! A complete server: a tool with structured output and progress, a resource, a resource
//! template and a prompt with typed arguments, served on stdin/stdout or over Streamable HTTP.
//!
//! ```sh
//! cargo run -p mcp-server --features http --example weather              # stdio
//! cargo run -p mcp-server --features http --example weather -- http 127.0.0.1:8080
//! ```
//!
//! docs/server.md includes this file between the `example:weather` markers.

// example:weather:start
use mcp_server::prelude::*;
use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};

/// `get_forecast`'s arguments: the input schema is derived from this type.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ForecastArgs {
    /// The city, e.g. "Oslo"
    city: String,
    /// How many days ahead, 1 to 7
    #[schemars(range(min = 1, max = 7))]
    days: u8,
}

/// `get_forecast`'s structured output: the output schema is derived from this type.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Forecast {
    city: String,
    days: Vec<Day>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Day {
    day: u8,
    high_celsius: f64,
    summary: String,
}

async fn get_forecast(cx: ToolContext, args: ForecastArgs) -> Structured<Forecast> {
    let mut days = Vec::new();
    for day in 1..=args.days {
        // Sent only when the client asked for progress (a `progressToken`).
        let message = format!("day {day} of {}", args.days);
        cx.progress(f64::from(day), Some(f64::from(args.days)), Some(&message))
            .await;
        days.push(Day {
            day,
            high_celsius: 18.0 + f64::from(day),
            summary: "sunny".to_owned(),
        });
    }
    Structured(Forecast {
        city: args.city,
        days,
    })
}

/// The variables of the `weather://cities/{city}` template.
#[derive(serde::Deserialize)]
struct CityVars {
    city: String,
}

/// `weekly_report`'s arguments. Prompt arguments travel as strings; typed fields are read from
/// them (`"3"`, `"true"`, `"brief"`) and a value that does not parse is a -32602 error.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ReportArgs {
    /// The city to report on
    city: String,
    /// Days to cover
    days: u32,
    /// Celsius (true) or Fahrenheit (false)
    metric: bool,
    /// How much to write
    style: Option<Style>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Style {
    Brief,
    Detailed,
}

async fn weekly_report(_cx: RequestContext, args: ReportArgs) -> String {
    let units = if args.metric { "Celsius" } else { "Fahrenheit" };
    let style = match args.style {
        Some(Style::Detailed) => "a detailed",
        Some(Style::Brief) | None => "a brief",
    };
    format!(
        "Write {style} weather report for {} covering {} days, temperatures in {units}.",
        args.city, args.days
    )
}

fn server() -> Result<Server, mcp_server::BuildError> {
    Server::builder(Implementation::new("weather", "1.0.0"))
        .tool(
            Tool::new("get_forecast").description("Forecast for a city"),
            get_forecast,
        )
        .resource(
            Resource::new("weather://cities", "cities")
                .description("The cities with forecasts")
                .mime_type("text/plain"),
            |_cx| async { "Oslo\nLisbon\nNairobi" },
        )
        .resource_template(
            ResourceTemplate::new("weather://cities/{city}", "city")
                .description("Today's weather in a city")
                .mime_type("text/plain"),
            |_cx, vars: CityVars| async move { format!("{}: 21 °C, sunny", vars.city) },
        )
        .prompt(
            Prompt::new("weekly_report").description("Asks for a weather report"),
            weekly_report,
        )
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = server()?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        // `weather` or `weather stdio`: one client, on stdin/stdout.
        None | Some("stdio") => server.serve_stdio().await?,
        // `weather http [ADDR]`: any number of clients at http://ADDR/mcp.
        Some("http") => {
            let addr = args.get(1).map_or("127.0.0.1:8080", String::as_str);
            let service = StreamableHttpService::builder(server.connection_handler())
                .config(HttpServerConfig::default().path("/mcp"))
                .build();
            eprintln!("serving at http://{addr}/mcp");
            service.serve(addr.parse()?).await?;
        }
        Some(other) => return Err(format!("unknown transport {other:?}: stdio or http").into()),
    }
    Ok(())
}
// example:weather:end
