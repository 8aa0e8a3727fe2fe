use std::time::Duration;
#[tokio::main]
async fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap());
    let ip = std::env::args().nth(2).unwrap();
    let kc = kube::config::Kubeconfig::read_from(dir.join("ca/admin.kubeconfig")).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
    config.cluster_url = format!("https://{ip}:6443").parse().unwrap();
    config.read_timeout = Some(Duration::from_secs(2));
    eprintln!("config ok");
    let client = kube::Client::try_from(config).unwrap();
    eprintln!("client ok");
    let r = tokio::time::timeout(Duration::from_secs(5), client.request_text(http::Request::get("/readyz").body(Vec::new()).unwrap())).await;
    eprintln!("{r:?}");
}
